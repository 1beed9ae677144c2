import Foundation

@testable import LogShip
@testable import LogShipRecord

/// The OTLP, Loki and journal export encoders as they were before issue 31: each line decoded with `JSONDecoder`
/// into a ``LogRecord``, the body made with `JSONEncoder`. Slow and plainly right; the encoders that write straight
/// from the spooled bytes are held against them.
enum ReferenceEncoders {
    /// The body for `lines`, with the ids ``RecordIDs/numbered(_:)`` gives, as the tests' `encode(_:)` does.
    static func encode(_ lines: [ArraySlice<UInt8>], as format: UploadFormat) throws -> [UInt8] {
        let records = try lines.map { try JSONDecoder().decode(LogRecord.self, from: Data($0)) }
        let ids = RecordIDs.numbered(lines.count)
        switch format {
        // The protobuf body's reference is the same message in JSON, which the tests parse into the generated types.
        case .otlp, .otlpJSON: return try otlp(records, ids: ids)
        case .loki: return try loki(records, lines: lines, ids: ids)
        case .journal:
            return records.enumerated().reduce(into: []) { journal($1.element, id: ids[$1.offset], to: &$0) }
        case .ndjson, .json: return try format.encoder.encode(lines, ids: ids)
        }
    }

    // MARK: OTLP

    private static func otlp(_ records: [LogRecord], ids: RecordIDs) throws -> [UInt8] {
        var groups: [Resource: [LogRecordJSON]] = [:]
        var order: [Resource] = []
        for (index, record) in records.enumerated() {
            let resource = Resource(host: record.host, service: vouchedUnit(record) ?? record.peer?.comm ?? "unknown")
            if groups[resource] == nil { order.append(resource) }
            groups[resource, default: []].append(LogRecordJSON(record, id: ids[index]))
        }
        let request = ExportLogsServiceRequest(resourceLogs: order.map { resource in
            ResourceLogs(
                resource: .init(
                    attributes: [.string("host.name", resource.host), .string("service.name", resource.service)]),
                scopeLogs: [
                    ScopeLogs(
                        scope: .init(name: "logshipd", version: LogShipVersion.current), logRecords: groups[resource]!),
                ])
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(request))
    }

    private static func severity(of record: LogRecord) -> (number: Int, text: String) {
        if record.priority == .crash { return (21, "FATAL") }
        return [(21, "FATAL"), (20, "ERROR4"), (19, "ERROR3"), (17, "ERROR"), (13, "WARN"), (10, "INFO2"), (9, "INFO"),
                (5, "DEBUG")][record.severity.rawValue]
    }

    private struct Resource: Hashable {
        var host: String
        var service: String
    }

    private struct ExportLogsServiceRequest: Encodable {
        var resourceLogs: [ResourceLogs]
    }

    private struct ResourceLogs: Encodable {
        var resource: ResourceJSON
        var scopeLogs: [ScopeLogs]
    }

    private struct ResourceJSON: Encodable {
        var attributes: [KeyValue]
    }

    private struct ScopeLogs: Encodable {
        struct Scope: Encodable {
            var name: String
            var version: String
        }

        var scope: Scope
        var logRecords: [LogRecordJSON]
    }

    private struct LogRecordJSON: Encodable {
        var timeUnixNano: String
        var observedTimeUnixNano: String
        var severityNumber: Int
        var severityText: String
        var body: AnyValue
        var attributes: [KeyValue]

        init(_ record: LogRecord, id: String) {
            let nanoseconds = String(record.timestamp.unixNanoseconds)
            timeUnixNano = nanoseconds
            observedTimeUnixNano = nanoseconds
            (severityNumber, severityText) = ReferenceEncoders.severity(of: record)
            body = AnyValue(stringValue: record.message)
            var attributes: [KeyValue] = [
                .string("log.record.uid", id), .string("logship.source", record.source.rawValue),
                .string("logship.priority", record.priority.description),
                .int("syslog.severity", Int64(record.severity.rawValue)),
            ]
            if let peer = record.peer {
                attributes += [
                    .int("process.pid", Int64(peer.pid)), .int("user.id", Int64(peer.uid)),
                    .int("group.id", Int64(peer.gid)),
                ]
                if let comm = peer.comm { attributes.append(.string("process.executable.name", comm)) }
            }
            if let unit = vouchedUnit(record) { attributes.append(.string("systemd.unit", unit)) }
            if record.truncated { attributes.append(.bool("logship.truncated", true)) }
            for (key, value) in fieldsBesideVouchedUnit(record) {
                attributes.append(.string(OTLPAttributeNames.attribute(forField: key), value))
            }
            self.attributes = attributes
        }
    }

    private struct KeyValue: Encodable {
        var key: String
        var value: AnyValue

        static func string(_ key: String, _ value: String) -> KeyValue {
            KeyValue(key: key, value: AnyValue(stringValue: value))
        }
        static func int(_ key: String, _ value: Int64) -> KeyValue {
            KeyValue(key: key, value: AnyValue(intValue: String(value)))
        }
        static func bool(_ key: String, _ value: Bool) -> KeyValue {
            KeyValue(key: key, value: AnyValue(boolValue: value))
        }
    }

    private struct AnyValue: Encodable {
        var stringValue: String?
        var intValue: String?
        var boolValue: Bool?
    }

    // MARK: Loki

    private static func loki(_ records: [LogRecord], lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> [UInt8] {
        var streams: [[String: String]: [(time: Int64, line: String, id: String)]] = [:]
        var order: [[String: String]] = []
        for (index, (record, line)) in zip(records, lines).enumerated() {
            var labels = ["host": record.host, "priority": record.priority.description]
            if let unit = vouchedUnit(record) { labels["unit"] = unit }
            if streams[labels] == nil { order.append(labels) }
            streams[labels, default: []].append(
                (record.timestamp.microsecondsSinceEpoch, String(decoding: line, as: UTF8.self), ids[index]))
        }
        let push = Push(streams: order.map { labels in
            let entries = streams[labels]!.enumerated()
                .sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }
                .map {
                    Entry(
                        time: String(Timestamp(microsecondsSinceEpoch: $0.element.time).unixNanoseconds),
                        line: $0.element.line, id: $0.element.id)
                }
            return Stream(stream: labels, values: entries)
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(push))
    }

    private struct Push: Encodable {
        var streams: [Stream]
    }

    private struct Stream: Encodable {
        var stream: [String: String]
        var values: [Entry]
    }

    /// `[time, line, {"log_record_uid": id}]`.
    private struct Entry: Encodable {
        var time: String
        var line: String
        var id: String

        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(time)
            try container.encode(line)
            try container.encode(["log_record_uid": id])
        }
    }

    // MARK: Journal export

    private static func journal(_ record: LogRecord, id: String, to body: inout [UInt8]) {
        var fields: [(String, String)] = [
            ("__REALTIME_TIMESTAMP", String(record.timestamp.microsecondsSinceEpoch)),
            ("MESSAGE", record.message),
            ("PRIORITY", String(record.severity.rawValue)),
            ("_HOSTNAME", record.host),
            ("LOGSHIP_PRIORITY_CLASS", record.priority.description),
            ("LOGSHIP_SOURCE", record.source.rawValue),
            ("LOGSHIP_RECORD_ID", id),
        ]
        if let peer = record.peer {
            fields += [("_PID", String(peer.pid)), ("_UID", String(peer.uid)), ("_GID", String(peer.gid))]
            if let comm = peer.comm { fields.append(("_COMM", comm)) }
        }
        if let unit = vouchedUnit(record) { fields.append(("_SYSTEMD_UNIT", unit)) }
        if record.truncated { fields.append(("LOGSHIP_TRUNCATED", "1")) }
        for (key, value) in fieldsBesideVouchedUnit(record) {
            fields.append((JournalFieldNames.name(forField: key), value))
        }
        for (name, value) in fields {
            JournalExportEncoder.appendField(name, Array(value.utf8), to: &body)
        }
        body.append(UInt8(ascii: "\n"))
    }

    // MARK: The host's word

    private static func vouchedUnit(_ record: LogRecord) -> String? {
        record.source == .journal ? record.fields["systemd_unit"] : nil
    }

    private static func fieldsBesideVouchedUnit(_ record: LogRecord) -> [RecordFields.Element] {
        guard vouchedUnit(record) != nil else { return Array(record.fields) }
        return record.fields.filter { $0.key != "systemd_unit" }
    }
}
