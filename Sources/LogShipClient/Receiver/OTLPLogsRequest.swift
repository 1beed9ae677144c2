/// An OTLP/HTTP `ExportLogsServiceRequest`, as far as it maps back to records: decoded from JSON, or read from
/// protobuf (``init(protobuf:)``).
struct OTLPLogsRequest: Decodable {
    struct ResourceLogs: Decodable {
        struct Resource: Decodable {
            var attributes: [KeyValue]?
        }

        struct ScopeLogs: Decodable {
            var logRecords: [Record]?
        }

        var resource: Resource?
        var scopeLogs: [ScopeLogs]?
    }

    struct Record: Decodable {
        var timeUnixNano: String?
        var severityNumber: Int?
        var body: AnyValue?
        var attributes: [KeyValue]?
    }

    struct KeyValue: Decodable {
        var key: String
        var value: AnyValue
    }

    struct AnyValue: Decodable {
        var stringValue: String?
        var intValue: String?
        var boolValue: Bool?

        var text: String? { stringValue ?? intValue ?? boolValue.map { String($0) } }
    }

    var resourceLogs: [ResourceLogs]

    /// Every record, with the id logshipd gave it (`log.record.uid`), if any.
    func records() -> [(record: LogRecord, id: String?)] {
        resourceLogs.flatMap { resourceLogs in
            let resource = Self.dictionary(resourceLogs.resource?.attributes)
            return (resourceLogs.scopeLogs ?? []).flatMap { $0.logRecords ?? [] }.map { record in
                Self.record(record, host: resource["host.name"] ?? "")
            }
        }
    }

    private static func record(_ record: Record, host: String) -> (record: LogRecord, id: String?) {
        let attributes = dictionary(record.attributes)
        let severity = attributes["syslog.severity"].flatMap { Int($0) }.flatMap(Severity.init(rawValue:))
            ?? severity(fromOTLP: record.severityNumber ?? 9)
        let priority = attributes["logship.priority"].flatMap(PriorityClass.init(name:))
            ?? PriorityClass(severity: severity)
        let microseconds = record.timeUnixNano.flatMap { Int64($0) }.map { $0 / 1000 } ?? 0
        var peer: PeerCredentials?
        if let pid = attributes["process.pid"].flatMap({ Int32($0) }) {
            peer = PeerCredentials(
                pid: pid, uid: attributes["user.id"].flatMap { UInt32($0) } ?? 0,
                gid: attributes["group.id"].flatMap { UInt32($0) } ?? 0, comm: attributes["process.executable.name"])
        }
        // Identity only from the names logshipd sets; a sender's field renamed away from them is a field again,
        // under the key it was sent with.
        var fields = RecordFields(
            attributes.lazy.filter { !OTLPAttributeNames.record.contains($0.key) }
                .map { (OTLPAttributeNames.field(forAttribute: $0.key), $0.value) })
        if let unit = attributes["systemd.unit"] { fields["systemd_unit"] = unit }
        let decoded = LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: microseconds), priority: priority, severity: severity,
            host: host, source: attributes["logship.source"].flatMap(LogRecord.Source.init(rawValue:)) ?? .socket,
            message: record.body?.text ?? "", peer: peer, fields: fields,
            truncated: attributes["logship.truncated"] == "true")
        return (decoded, attributes["log.record.uid"])
    }

    private static func dictionary(_ attributes: [KeyValue]?) -> [String: String] {
        Dictionary(
            (attributes ?? []).compactMap { attribute in attribute.value.text.map { (attribute.key, $0) } }
        ) { $1 }
    }

    /// The syslog severity nearest to an OpenTelemetry severity number.
    private static func severity(fromOTLP number: Int) -> Severity {
        switch number {
        case 21...: .emergency
        case 17...20: .error
        case 13...16: .warning
        case 10...12: .notice
        case 9: .informational
        default: .debug
        }
    }
}
