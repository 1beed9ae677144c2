/// The five delivery classes of logshipd, from chatter to crash reports.
///
/// A record's class decides which operation carries it and how that operation is ordered in the upload queue: a
/// crash report always goes ahead of errors, errors ahead of warnings, and so on.
public enum PriorityClass: Int, CaseIterable, Comparable, Hashable, Sendable, CustomStringConvertible {
    case debug = 0
    case info = 1
    case warning = 2
    case error = 3
    case crash = 4

    /// The classes from the most to the least urgent.
    public static let mostUrgentFirst: [PriorityClass] = allCases.reversed()

    /// Classifies a syslog severity (0 emerg … 7 debug).
    ///
    /// Severities 0–3 are errors, 4–5 warnings, 6 info and 7 debug. Crash is never inferred from a severity:
    /// only an explicit `crash` priority (within its sender's budget) or a journal entry the host vouches for
    /// (``CrashEvidence``) makes a record a crash report.
    public init(severity: Severity) {
        switch severity.rawValue {
        case 0...3: self = .error
        case 4...5: self = .warning
        case 6: self = .info
        default: self = .debug
        }
    }

    /// Parses a class name (`crash`, `error`, `warning`, `info`, `debug`), case-insensitively.
    /// Every spelling ``resolve(_:)`` takes, for help and error text.
    public static let spellings =
        "crash, error (err), warning (warn), info or debug; or a syslog severity: 0-7, emerg, panic, alert, crit, "
            + "critical, notice, informational (any case)"

    public init?(name: some StringProtocol) {
        switch name.lowercased() {
        case "crash": self = .crash
        case "error", "err": self = .error
        case "warning", "warn": self = .warning
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }

    /// The severity given to a record that names only its class.
    public var defaultSeverity: Severity {
        switch self {
        case .crash: .critical
        case .error: .error
        case .warning: .warning
        case .info: .informational
        case .debug: .debug
        }
    }

    public var description: String { staticName.description }

    public static func < (lhs: PriorityClass, rhs: PriorityClass) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}

extension PriorityClass {
    /// Resolves what a user may give as a priority: a class name (`crash` … `debug`, with its default severity)
    /// or a syslog severity (`0`–`7`, `err`, `notice`, …, with the class it falls in).
    public static func resolve(_ text: some StringProtocol) -> (PriorityClass, Severity)? {
        if let named = PriorityClass(name: text) {
            return (named, named.defaultSeverity)
        }
        if let severity = Severity(text: text) {
            return (PriorityClass(severity: severity), severity)
        }
        return nil
    }
}
