import Foundation
import Logging

/// Parses one configuration value written as text, and says what it expects when the text is bad.
///
/// Every parser rejects what would later trap or overflow (a duration that rounds to zero or does not fit in
/// 64-bit nanoseconds, a size that overflows), so a bad value is a one-line error naming its key, never a crash.
struct ValueParser<Value>: Sendable {
    /// What a good value looks like, for the error message.
    let expected: String
    /// The parsed value, or `nil` for text this parser rejects.
    let parse: @Sendable (String) -> Value?
}

extension ValueParser<String> {
    static let text = ValueParser(expected: "text") { $0 }

    static let nonEmptyText = ValueParser(expected: "a non-empty value") { $0.isEmpty ? nil : $0 }

    static func oneOf(_ choices: [String]) -> ValueParser {
        ValueParser(expected: "one of \(choices.joined(separator: ", "))") { choices.contains($0) ? $0 : nil }
    }

    /// `host:port` (``ListenAddress``: `127.0.0.1:9464`, `[::1]:9464`, `localhost:9464`); empty is off.
    static let listenAddress = ValueParser(expected: "host:port such as 127.0.0.1:9464 or [::1]:9464, or empty") { text in
        if text.isEmpty { return text }
        guard ListenAddress(text) != nil else { return nil }
        return text
    }

    /// An `http://` or `https://` URL with a host: one uploads can go to (``UploadEndpoint``).
    static let httpURL = ValueParser(expected: "an http:// or https:// URL with a host") { text in
        UploadEndpoint(url: text) == nil ? nil : text
    }
}

extension ValueParser<Int?> {
    /// A level of the compression `name` (``UploadCompression/levels(of:)``); none for `none`.
    static func compressionLevel(of name: String) -> ValueParser {
        guard let levels = UploadCompression.levels(of: name) else {
            return ValueParser(expected: "no level, since upload.compression is \(name)") { _ in nil }
        }
        let range = levels.range
        return ValueParser(expected: "a \(name) level from \(range.lowerBound) to \(range.upperBound)") { text in
            // Spelled out: a failed parse must be no value at all, not a value of `nil`.
            guard let level = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(level) else { return nil }
            return level
        }
    }
}

extension ValueParser<Int> {
    static func integer(_ range: ClosedRange<Int>) -> ValueParser {
        ValueParser(expected: "a whole number from \(range.lowerBound) to \(range.upperBound)") {
            Int($0.trimmingCharacters(in: .whitespaces)).flatMap { range.contains($0) ? $0 : nil }
        }
    }

    /// Bytes: `65536`, `64KiB`, `1MiB`, `1GiB` (also `K`, `M`, `G`, meaning the same powers of two).
    static func byteCount(_ range: ClosedRange<Int>) -> ValueParser {
        let units: [(String, Int)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
            ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40),
        ]
        let bounds = range.upperBound == Int.max
            ? "of at least \(ConfigurationText.bytes(range.lowerBound))"
            : "from \(ConfigurationText.bytes(range.lowerBound)) to \(ConfigurationText.bytes(range.upperBound))"
        return ValueParser(expected: "a size \(bounds), such as 65536, 64KiB, 1MiB, 1GiB") { text in
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            var number = trimmed
            var multiplier = 1
            if let (suffix, factor) = units.first(where: { trimmed.hasSuffix($0.0) }) {
                number = String(trimmed.dropLast(suffix.count)).trimmingCharacters(in: .whitespaces)
                multiplier = factor
            }
            guard let value = Int(number), value >= 0 else { return nil }
            let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
            return !overflow && range.contains(bytes) ? bytes : nil
        }
    }
}

extension ValueParser<Double> {
    /// A number, with a fraction or not, within `range`.
    static func number(_ range: ClosedRange<Double>) -> ValueParser {
        let bounds = "\(ConfigurationText.number(range.lowerBound)) to \(ConfigurationText.number(range.upperBound))"
        return ValueParser(expected: "a number from \(bounds)") {
            Double($0.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite && range.contains($0) ? $0 : nil }
        }
    }
}

extension ValueParser<Duration> {
    /// The longest duration any key accepts: far beyond any sensible setting, far inside what every clock and
    /// timer type here can hold.
    static let longestDuration: Duration = .seconds(30 * 86_400)

    /// `10s`, `500ms`, `2m`, `1h`, `1d`, or a bare number of seconds; at least `minimum`, at most 30 days.
    static func duration(minimum: Duration = .milliseconds(1)) -> ValueParser {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        let range = minimum.seconds...longestDuration.seconds
        let bounds = "from \(ConfigurationText.duration(minimum)) to \(ConfigurationText.duration(longestDuration))"
        return ValueParser(expected: "a duration \(bounds), such as 500ms, 10s, 2m, 1h") { text in
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            var number = trimmed
            var scale = 1.0
            if let (suffix, factor) = units.first(where: { trimmed.hasSuffix($0.0) }) {
                number = String(trimmed.dropLast(suffix.count))
                scale = factor
            }
            // Checked as a Double before any conversion: 1e300s must be an error, not a trap.
            guard let value = Double(number), value.isFinite, range.contains(value * scale) else { return nil }
            return .milliseconds(Int64((value * scale * 1000).rounded()))
        }
    }
}

/// Durations as the configuration takes them, for the commands that take one too (`logctl flush --timeout`).
public enum DurationText {
    /// `500ms`, `10s`, `2m`, `1h`, `1d`, or a number of seconds, from 1 ms to 30 days; `nil` for anything else.
    public static func parse(_ text: String) -> Duration? { ValueParser<Duration>.duration().parse(text) }

    /// What ``parse(_:)`` takes, in words, for an error message.
    public static var expected: String { ValueParser<Duration>.duration().expected }
}

extension ValueParser<[String]> {
    /// A comma-separated list (`a.service, b.service`); empty text is an empty list.
    static let list = ValueParser(expected: "a comma-separated list") { text in
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

extension ValueParser<Severity> {
    /// A syslog severity: `0`…`7` or `emerg`, `alert`, `crit`, `err`, `warning`, `notice`, `info`, `debug`.
    static let severity = ValueParser(expected: "a severity 0-7 or emerg, alert, crit, err, warning, notice, info, debug") {
        Severity(text: $0.trimmingCharacters(in: .whitespaces))
    }
}

extension ValueParser<UploadFormat> {
    static let format = ValueParser(expected: "one of \(UploadFormat.allCases.map(\.rawValue).joined(separator: ", "))") {
        UploadFormat(rawValue: $0)
    }
}

extension ValueParser<JournalStartPosition> {
    static let journalStart = ValueParser(expected: "head or tail") { JournalStartPosition(rawValue: $0) }
}

extension ValueParser<UInt32> {
    /// An octal file mode such as `0660`.
    static let fileMode = ValueParser(expected: "an octal file mode such as \"0660\"") { text in
        guard let mode = UInt32(text, radix: 8), mode <= 0o7777 else { return nil }
        return mode
    }
}

extension ValueParser<Bool> {
    static let boolean = ValueParser(expected: "true or false") { text in
        switch text.lowercased() {
        case "true", "yes", "on", "1": true
        case "false", "no", "off", "0": false
        default: nil
        }
    }
}

extension ValueParser<[(String, String)]> {
    /// Headers from the environment: `Name: value` pairs separated by newlines or `;`.
    static let headerList = ValueParser(expected: "\"Name: value\" pairs separated by \";\"") { text in
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
}

extension ValueParser<Logger.Level> {
    static let logLevel = ValueParser(
        expected: "one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))"
    ) { Logger.Level(rawValue: $0.lowercased()) }
}

/// Sizes and durations as people write them in the configuration.
enum ConfigurationText {
    /// `65536` as `64KiB`, `1073741824` as `1GiB`; other values as plain bytes.
    static func bytes(_ bytes: Int) -> String {
        for (suffix, factor) in [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        where bytes >= factor && bytes % factor == 0 {
            return "\(bytes / factor)\(suffix)"
        }
        return "\(bytes)"
    }

    /// `1000000.0` as `1000000`, `0.5` as `0.5`. Not `formatted()`: its locale-aware formatting loads ICU's data
    /// and number formatters at start, which stay resident for a message seldom shown (BENCHMARKS.md, Measured
    /// choices).
    static func number(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? "\(Int64(number))" : "\(number)"
    }

    /// `.seconds(90)` as `90s`, `.seconds(120)` as `2m`, `.milliseconds(1)` as `1ms`.
    static func duration(_ duration: Duration) -> String {
        let milliseconds = Int64((duration.seconds * 1000).rounded())
        for (suffix, factor) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        where milliseconds >= factor && milliseconds % factor == 0 {
            return "\(milliseconds / factor)\(suffix)"
        }
        return "\(milliseconds)ms"
    }
}
