extension LogRecord {
    /// The record as one NDJSON line (no trailing newline), the wire form and the spool's stored form.
    ///
    /// Keys come in a fixed order (`timestamp`, `priority`, `severity`, `host`, `source`, `message`, `pid`, `uid`,
    /// `gid`, `comm`, `fields`, `truncated`); keys whose value is unknown are left out, and `truncated` appears only
    /// when true. Field keys are sorted so equal records encode to equal bytes.
    public var ndjsonLine: [UInt8] {
        // The longest line without its strings' contents is 211 bytes (every key, a negative pid, the largest
        // uid and gid, `truncated`); each field adds six bytes of quotes and punctuation.
        var capacity = 256 + JSONLineWriter.encodedSizeBound(of: host) + JSONLineWriter.encodedSizeBound(of: message)
            + (peer?.comm.map(JSONLineWriter.encodedSizeBound(of:)) ?? 0)
        for (key, value) in fields {
            capacity += 6 + JSONLineWriter.encodedSizeBound(of: key) + JSONLineWriter.encodedSizeBound(of: value)
        }
        return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            var writer = JSONLineWriter(buffer)
            writer.field("timestamp", timestamp: timestamp)
            writer.field("priority", rawString: priority.staticName)
            writer.field("severity", integer: severity.rawValue)
            writer.field("host", string: host)
            writer.field("source", rawString: source.staticName)
            writer.field("message", string: message)
            if let peer {
                writer.field("pid", integer: Int(peer.pid))
                writer.field("uid", integer: Int(peer.uid))
                writer.field("gid", integer: Int(peer.gid))
                if let comm = peer.comm {
                    writer.field("comm", string: comm)
                }
            }
            if !fields.isEmpty {
                writer.field("fields", object: fields)
            }
            if truncated {
                writer.field("truncated", bool: true)
            }
            count = writer.finish()
        }
    }
}

extension PriorityClass {
    /// ``description`` as a static string, for the encoder.
    var staticName: StaticString {
        switch self {
        case .crash: "crash"
        case .error: "error"
        case .warning: "warning"
        case .info: "info"
        case .debug: "debug"
        }
    }
}

extension LogRecord.Source {
    /// `rawValue` as a static string, for the encoder.
    var staticName: StaticString {
        switch self {
        case .socket: "socket"
        case .datagram: "datagram"
        case .control: "control"
        case .journal: "journal"
        }
    }
}
