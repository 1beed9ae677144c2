/// Byte rates as the configuration and `logctl throttle` take them: a size per second, `256KiB/s` or `256KiB`.
public enum ByteRateText {
    /// What ``parse(_:)`` takes, in words.
    public static let expected = "bytes per second such as 131072, 128KiB/s, 1MiB/s"

    /// `128KiB/s`, `1MiB`, `131072`: so many bytes per second (1 byte to 1 TiB per second); `off` and `0` are no
    /// budget; `nil` for anything else.
    public static func parse(_ text: String) -> ThrottleOverride? {
        var trimmed = text.trimmingSpaces()
        if trimmed.lowercased() == "off" || trimmed == "0" { return .off }
        if trimmed.hasSuffix("/s") { trimmed.removeLast(2) }
        return ValueParser<Int>.byteCount(1...(1 << 40)).parse(trimmed).map { .bytesPerSecond($0) }
    }

    /// `128 KiB/s`, `1 MiB/s`, `900 B/s`.
    public static func format(_ bytesPerSecond: Int) -> String {
        ByteCountText.approximate(bytesPerSecond) + "/s"
    }
}

/// What an operator set with `logctl throttle`, in place of the configured byte budget until the next reload or
/// restart.
public enum ThrottleOverride: Hashable, Sendable {
    /// This many request body bytes per second.
    case bytesPerSecond(Int)
    /// No budget at all: neither bytes nor `requests_per_second`.
    case off
}
