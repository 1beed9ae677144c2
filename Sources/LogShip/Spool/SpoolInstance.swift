/// One life of a spool: a random 128-bit number drawn when a spool starts with nothing in it, and kept in the
/// spool file for as long as it holds records. With a record's class and its sequence in the class it makes the
/// record's id (``RecordID``), which no other record of any spool shares.
///
/// A spool that opens empty draws a new one: its sequences start again, and the same instance with the same
/// sequences would name other records. Nothing that could be sent again is lost by that: an empty spool has
/// nothing left to send.
public struct SpoolInstance: Hashable, Sendable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A new instance, from the system's random source.
    public static func random() -> SpoolInstance {
        var generator = SystemRandomNumberGenerator()
        return SpoolInstance(high: generator.next(), low: generator.next())
    }

    /// The instance as it is stored: 32 lowercase hexadecimal digits.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 32, hex.utf8.allSatisfy(Self.isLowercaseHexDigit),
            let high = UInt64(hex.prefix(16), radix: 16), let low = UInt64(hex.suffix(16), radix: 16)
        else { return nil }
        self.init(high: high, low: low)
    }

    /// 32 lowercase hexadecimal digits.
    public var description: String { Self.digits(high) + Self.digits(low) }

    private static func digits(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.utf8.count) + text
    }

    private static func isLowercaseHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
