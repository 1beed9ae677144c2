#if canImport(Glibc)
import Glibc
#endif

/// The JSON line logshipd's intake reads: `message`, `severity`, `priority`, `timestamp` and `fields`.
///
/// Its own small writer rather than `LogShipRecord`'s NDJSON encoder: this library must depend on swift-log
/// alone, and the record module brings SwiftNIO.
enum JSONLine {
    /// One record, stamped with the current time.
    static func record(message: String, severity: Int, priority: String?, fields: [(String, String)]) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(message.utf8.count + 64 * fields.count + 96)
        line += Array(#"{"timestamp":""#.utf8) + Array(now().utf8) + Array(#"","severity":"#.utf8)
        line += Array(String(severity).utf8)
        if let priority {
            line += Array(#","priority":"#.utf8)
            appendString(priority, to: &line)
        }
        line += Array(#","message":"#.utf8)
        appendString(message, to: &line)
        line += Array(#","fields":{"#.utf8)
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            appendString(key, to: &line)
            line.append(UInt8(ascii: ":"))
            appendString(value, to: &line)
        }
        line += Array("}}".utf8)
        return line
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    static func appendString(_ text: String, to line: inout [UInt8]) {
        line.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): line += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): line += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): line += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): line += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): line += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                line += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xf)]]
            default: line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }

    /// The current time, RFC 3339 in UTC with microseconds.
    static func now() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var seconds = time.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(Int(parts.tm_year) + 1900, 4))-\(padded(Int(parts.tm_mon) + 1, 2))"
            + "-\(padded(Int(parts.tm_mday), 2))"
            + "T\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))"
            + ".\(padded(time.tv_nsec / 1000, 6))Z"
    }
}
