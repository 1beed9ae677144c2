/// A syslog message's header, parsed from the three forms local clients send over a Unix socket:
/// RFC 5424 (`logger --rfc5424`), RFC 3164 with or without a host name (`logger`, glibc `syslog()`), and the
/// sd-daemon prefix (`<3>disk failed`).
struct SyslogMessage: Hashable, Sendable {
    var severity: Severity
    /// The facility, or `nil` for the sd-daemon form, which carries none.
    var facility: Int?
    var timestamp: Timestamp?
    var hostname: String?
    var identifier: String?
    var processID: String?
    var messageID: String?
    var structuredData: RecordFields = [:]
    var message: String

    static let facilityNames: [StaticString] = [
        "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp",
        "ntp", "security", "console", "solaris-cron", "local0", "local1", "local2", "local3", "local4", "local5",
        "local6", "local7",
    ]

    /// The record this message makes: the header's severity, timestamp and tag, with what the payload claims
    /// about its origin kept in fields, apart from the trusted values the record holds (the host, the peer).
    ///
    /// Made in one go rather than by changing a record made beforehand: an existing record passed `inout` was
    /// copied and destroyed twice per message.
    func record(
        localHostname: String, source: LogRecord.Source, peer: PeerCredentials?, receivedAt: Timestamp,
        truncated: Bool
    ) -> LogRecord {
        var fields = RecordFields()
        // In key order, so that each is appended.
        fields.reserveCapacity(5 + structuredData.count)
        if let facility { fields["syslog_facility"] = Self.facilityNames[facility].description }
        if let hostname, hostname != localHostname { fields["syslog_hostname"] = hostname }
        if let identifier { fields["syslog_identifier"] = identifier }
        if let messageID { fields["syslog_msgid"] = messageID }
        if let processID { fields["syslog_pid"] = processID }
        fields.merge(structuredData)
        return LogRecord(
            timestamp: timestamp ?? receivedAt, priority: PriorityClass(severity: severity), severity: severity,
            host: localHostname, source: source, message: message, peer: peer, fields: fields, truncated: truncated)
    }
}

extension SyslogMessage {
    /// The message `parsed` found in `bytes`.
    init(_ parsed: RFC3164Message, in bytes: ArraySlice<UInt8>) {
        func text(_ range: Range<Int>) -> String { SyslogParser.text(bytes[range]) }
        self.init(
            severity: parsed.severity, facility: parsed.facility, timestamp: parsed.timestamp,
            hostname: parsed.hostname.map(text), identifier: parsed.identifier.map(text),
            processID: parsed.processID.map(text), message: text(parsed.message))
    }
}
