import Foundation
import Logging

/// Parsers for configuration values written as text; each returns `nil` for text it rejects.
enum ValueParser {
    static func text(_ text: String) -> String? { text }

    static func nonEmptyText(_ text: String) -> String? { text.isEmpty ? nil : text }

    static func oneOf(_ choices: Set<String>) -> (String) -> String? {
        { choices.contains($0) ? $0 : nil }
    }

    static func integer(_ range: ClosedRange<Int>) -> (String) -> Int? {
        { Int($0.trimmingCharacters(in: .whitespaces)).flatMap { range.contains($0) ? $0 : nil } }
    }

    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": true
        case "false", "no", "off", "0": false
        default: nil
        }
    }

    /// An octal file mode such as `0660`.
    static func fileMode(_ text: String) -> UInt32? {
        guard let mode = UInt32(text, radix: 8), mode <= 0o7777 else { return nil }
        return mode
    }

    /// Bytes: `65536`, `64KiB`, `1MiB`, `1GiB` (also `K`, `M`, `G`, meaning the same powers of two).
    static func byteCount(minimum: Int) -> (String) -> Int? {
        { text in
            let units: [(String, Int)] = [
                ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30),
            ]
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            var number = trimmed
            var multiplier = 1
            if let (suffix, factor) = units.first(where: { trimmed.hasSuffix($0.0) }) {
                number = String(trimmed.dropLast(suffix.count)).trimmingCharacters(in: .whitespaces)
                multiplier = factor
            }
            guard let value = Int(number), value >= 0 else { return nil }
            let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
            return !overflow && bytes >= minimum ? bytes : nil
        }
    }

    /// `10s`, `500ms`, `2m`, `1h`, or a bare number of seconds.
    static func duration(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        var number = trimmed
        var scale = 1.0
        if let (suffix, factor) = units.first(where: { trimmed.hasSuffix($0.0) }) {
            number = String(trimmed.dropLast(suffix.count))
            scale = factor
        }
        guard let value = Double(number), value.isFinite, value > 0 else { return nil }
        return .milliseconds(Int64((value * scale * 1000).rounded()))
    }

    /// An `http://` or `https://` URL with a host.
    static func httpURL(_ text: String) -> String? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else { return nil }
        return text
    }

    /// Headers from the environment: `Name: value` pairs separated by newlines or `;`.
    static func headerList(_ text: String) -> [(String, String)]? {
        var headers: [(String, String)] = []
        for entry in text.split(whereSeparator: { $0 == "\n" || $0 == ";" }) {
            guard let colon = entry.firstIndex(of: ":") else { return nil }
            let name = entry[..<colon].trimmingCharacters(in: .whitespaces)
            let value = entry[entry.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return nil }
            headers.append((name, value))
        }
        return headers
    }

    static func logLevel(_ text: String) -> Logger.Level? {
        Logger.Level(rawValue: text.lowercased())
    }
}
