extension LogRecord {
    /// The record as one NDJSON line (no trailing newline), the wire form and the spool's stored form.
    ///
    /// Keys come in a fixed order (`timestamp`, `priority`, `severity`, `host`, `source`, `message`, `pid`, `uid`,
    /// `gid`, `comm`, `fields`, `truncated`); keys whose value is unknown are left out, and `truncated` appears only
    /// when true. Field keys are sorted so equal records encode to equal bytes.
    public var ndjsonLine: [UInt8] {
        NDJSONLine.make(
            timestamp: timestamp, priority: priority, severity: severity, host: host, source: source,
            message: message, peer: peer, fields: fields, truncated: truncated)
    }
}

/// The layout of a record's NDJSON line, whatever holds its text: ``LogRecord/ndjsonLine`` writes it from a record,
/// ``RecordParser/encode(_:source:peer:receivedAt:)`` from the bytes of a frame, and both make the same bytes.
enum NDJSONLine {
    /// See ``LogRecord/ndjsonLine`` for the order of the keys; `fields` must come sorted by key.
    static func make<Message: JSONText, Fields: Sequence, Key: JSONText, Value: JSONText>(
        timestamp: Timestamp, priority: PriorityClass, severity: Severity, host: String, source: LogRecord.Source,
        message: Message, peer: PeerCredentials?, fields: Fields, truncated: Bool
    ) -> [UInt8] where Fields.Element == (key: Key, value: Value) {
        // Room for the longest line these strings can make: without their contents at most 211 bytes (every key,
        // a negative pid, the largest uid and gid, `truncated`), each field six more bytes of quotes and
        // punctuation, and six bytes per byte of every string (`\u001f`). Only the line itself is kept: it is
        // written into memory of its own and copied out, which costs less than looking for escapes twice (or
        // than a closure over `self`, which copies the record). That memory is on the stack when the room fits
        // in 1 KiB (at most 128 bytes of strings), the standard library's limit; on the heap otherwise.
        var strings = host.utf8.count + message.utf8Count + (peer?.comm?.utf8.count ?? 0)
        var hasFields = false
        for (key, value) in fields {
            strings += 1 + key.utf8Count + value.utf8Count
            hasFields = true
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256 + 6 * strings) { buffer in
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
            if hasFields {
                writer.field("fields", object: fields)
            }
            if truncated {
                writer.field("truncated", bool: true)
            }
            return Array(UnsafeBufferPointer(rebasing: buffer[..<writer.finish()]))
        }
    }
}

extension PriorityClass {
    /// The class's name as a static string: the encoder copies it without making a string, and ``description``
    /// is made from it.
    package var staticName: StaticString {
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
    package var staticName: StaticString {
        switch self {
        case .socket: "socket"
        case .datagram: "datagram"
        case .control: "control"
        case .journal: "journal"
        }
    }
}
