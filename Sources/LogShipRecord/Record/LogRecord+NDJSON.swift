extension LogRecord {
    /// The record as one NDJSON line (no trailing newline), the wire form and the spool's stored form.
    ///
    /// Keys come in a fixed order (`timestamp`, `priority`, `severity`, `host`, `source`, `message`, `pid`, `uid`,
    /// `gid`, `comm`, `fields`, `truncated`); keys whose value is unknown are left out, and `truncated` appears only
    /// when true. Field keys are sorted so equal records encode to equal bytes.
    public var ndjsonLine: [UInt8] {
        var writer = JSONObjectWriter(capacity: message.utf8.count + 192)
        writer.field("timestamp", timestamp: timestamp)
        writer.field("priority", string: priority.description)
        writer.field("severity", integer: severity.rawValue)
        writer.field("host", string: host)
        writer.field("source", string: source.rawValue)
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
        return writer.finish()
    }
}

/// Appends one JSON object to a byte buffer, escaping strings as RFC 8259 requires.
struct JSONObjectWriter {
    private var bytes: [UInt8]
    private var isFirst = true

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    mutating func field(_ key: String, string value: String) {
        appendKey(key)
        Self.appendString(value, to: &bytes)
    }

    mutating func field(_ key: String, integer value: Int) {
        appendKey(key)
        bytes.appendPadded(value)
    }

    mutating func field(_ key: String, timestamp: Timestamp) {
        appendKey(key)
        bytes.append(UInt8(ascii: "\""))
        timestamp.appendRFC3339(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func field(_ key: String, bool value: Bool) {
        appendKey(key)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func field(_ key: String, object pairs: some Sequence<(key: String, value: String)>) {
        appendKey(key)
        bytes.append(UInt8(ascii: "{"))
        var isFirst = true
        for pair in pairs {
            if !isFirst { bytes.append(UInt8(ascii: ",")) }
            isFirst = false
            Self.appendString(pair.key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            Self.appendString(pair.value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private mutating func appendKey(_ key: String) {
        if !isFirst { bytes.append(UInt8(ascii: ",")) }
        isFirst = false
        Self.appendString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escape: copy them whole.
        var string = string
        let copied = string.withUTF8 { utf8 -> Bool in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                return false
            }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
