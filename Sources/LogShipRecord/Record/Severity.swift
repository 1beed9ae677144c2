/// A syslog severity, 0 (emergency) to 7 (debug), as in RFC 5424 section 6.2.1.
public struct Severity: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    /// Creates a severity; `nil` unless `rawValue` is in 0...7.
    public init?(rawValue: Int) {
        guard (0...7).contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private init(unchecked rawValue: Int) {
        self.rawValue = rawValue
    }

    public static let emergency = Severity(unchecked: 0)
    public static let alert = Severity(unchecked: 1)
    public static let critical = Severity(unchecked: 2)
    public static let error = Severity(unchecked: 3)
    public static let warning = Severity(unchecked: 4)
    public static let notice = Severity(unchecked: 5)
    public static let informational = Severity(unchecked: 6)
    public static let debug = Severity(unchecked: 7)

    /// Parses a severity number (`"3"`) or a syslog keyword (`"err"`, `"warning"`, …).
    public init?(text: some StringProtocol) {
        if let number = Int(text) {
            self.init(rawValue: number)
            return
        }
        let names = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
        let aliases = ["panic": 0, "critical": 2, "error": 3, "warn": 4, "informational": 6]
        let lowered = text.lowercased()
        guard let value = names.firstIndex(of: lowered) ?? aliases[lowered] else { return nil }
        self.init(unchecked: value)
    }

    public var description: String { String(rawValue) }

    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rawValue < rhs.rawValue }
}
