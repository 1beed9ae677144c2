/// Parses one value written as text, and says what it expects when the text is bad: the configuration's keys
/// and logctl's arguments take sizes, rates and durations the same way.
///
/// Every parser rejects what would later trap or overflow (a duration that rounds to zero or does not fit in
/// 64-bit nanoseconds, a size that overflows), so a bad value is a one-line error naming its key, never a crash.
package struct ValueParser<Value>: Sendable {
    /// What a good value looks like, for the error message.
    package let expected: String
    /// The parsed value, or `nil` for text this parser rejects.
    package let parse: @Sendable (String) -> Value?

    package init(expected: String, parse: @escaping @Sendable (String) -> Value?) {
        self.expected = expected
        self.parse = parse
    }
}

extension ValueParser<Int> {
    package static func integer(_ range: ClosedRange<Int>) -> ValueParser {
        ValueParser(expected: "a whole number from \(range.lowerBound) to \(range.upperBound)") {
            Int($0.trimmingSpaces()).flatMap { range.contains($0) ? $0 : nil }
        }
    }

    /// Bytes: `65536`, `64KiB`, `1MiB`, `1GiB` (also `K`, `M`, `G`, meaning the same powers of two).
    package static func byteCount(_ range: ClosedRange<Int>) -> ValueParser {
        let units: [(String, Int)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
            ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40),
        ]
        let bounds = range.upperBound == Int.max
            ? "of at least \(ConfigurationText.bytes(range.lowerBound))"
            : "from \(ConfigurationText.bytes(range.lowerBound)) to \(ConfigurationText.bytes(range.upperBound))"
        return ValueParser(expected: "a size \(bounds), such as 65536, 64KiB, 1MiB, 1GiB") { text in
            let trimmed = text.trimmingSpaces()
            var number = trimmed
            var multiplier = 1
            if let (suffix, factor) = units.first(where: { trimmed.hasSuffix($0.0) }) {
                number = String(trimmed.dropLast(suffix.count)).trimmingSpaces()
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
    package static func number(_ range: ClosedRange<Double>) -> ValueParser {
        let bounds = "\(ConfigurationText.number(range.lowerBound)) to \(ConfigurationText.number(range.upperBound))"
        return ValueParser(expected: "a number from \(bounds)") {
            Double($0.trimmingSpaces()).flatMap { $0.isFinite && range.contains($0) ? $0 : nil }
        }
    }
}

extension ValueParser<Duration> {
    /// The longest duration any key accepts: far beyond any sensible setting, far inside what every clock and
    /// timer type here can hold.
    package static let longestDuration: Duration = .seconds(30 * 86_400)

    /// `10s`, `500ms`, `2m`, `1h`, `1d`, or a bare number of seconds; at least `minimum`, at most 30 days.
    package static func duration(minimum: Duration = .milliseconds(1)) -> ValueParser {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        let range = minimum.seconds...longestDuration.seconds
        let bounds = "from \(ConfigurationText.duration(minimum)) to \(ConfigurationText.duration(longestDuration))"
        return ValueParser(expected: "a duration \(bounds), such as 500ms, 10s, 2m, 1h") { text in
            let trimmed = text.trimmingSpaces()
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

/// Sizes and durations as people write them in the configuration.
package enum ConfigurationText {
    /// `65536` as `64KiB`, `1073741824` as `1GiB`; other values as plain bytes.
    package static func bytes(_ bytes: Int) -> String {
        for (suffix, factor) in [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        where bytes >= factor && bytes % factor == 0 {
            return "\(bytes / factor)\(suffix)"
        }
        return "\(bytes)"
    }

    /// `1000000.0` as `1000000`, `0.5` as `0.5`. Not `formatted()`: its locale-aware formatting loads ICU's data
    /// and number formatters at start, which stay resident for a message seldom shown (BENCHMARKS.md, Measured
    /// choices).
    package static func number(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? "\(Int64(number))" : "\(number)"
    }

    /// `.seconds(90)` as `90s`, `.seconds(120)` as `2m`, `.milliseconds(1)` as `1ms`.
    package static func duration(_ duration: Duration) -> String {
        let milliseconds = Int64((duration.seconds * 1000).rounded())
        for (suffix, factor) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        where milliseconds >= factor && milliseconds % factor == 0 {
            return "\(milliseconds / factor)\(suffix)"
        }
        return "\(milliseconds)ms"
    }
}
