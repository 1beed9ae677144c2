import LogShipRecord

/// OpenTelemetry's severity for a record: its number and its text.
struct OTLPSeverity {
    var number: Int
    var text: StaticString

    /// The severity for a record's syslog severity; a crash report is FATAL whatever its severity.
    init(_ record: RecordLine) {
        (number, text) = Self.severity(priority: record.priority, severity: record.severity)
    }

    private static func severity(priority: PriorityClass, severity: Severity) -> (number: Int, text: StaticString) {
        if priority == .crash { return (21, "FATAL") }
        switch severity.rawValue {
        case 0: return (21, "FATAL")
        case 1: return (20, "ERROR4")
        case 2: return (19, "ERROR3")
        case 3: return (17, "ERROR")
        case 4: return (13, "WARN")
        case 5: return (10, "INFO2")
        case 6: return (9, "INFO")
        default: return (5, "DEBUG")
        }
    }
}
