import Foundation

/// OTLP/HTTP logs with JSON encoding: an `ExportLogsServiceRequest` (`application/json`, POST `/v1/logs`), records
/// grouped by resource (`host.name`, `service.name`).
///
/// The resource and the attributes named in ``OTLPAttributeNames`` come from what the host vouches for; a sender's
/// field is an attribute of its own name, or `logship.field.<key>` where that name is logshipd's.
///
/// Follows the OTLP JSON mapping: 64-bit integers as strings, enums as numbers, lower camel case names.
struct OTLPEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/v1/logs" }

    func encode(_ lines: [ArraySlice<UInt8>]) throws -> [UInt8] {
        let decoder = JSONDecoder()
        var groups: [Resource: [LogRecordJSON]] = [:]
        var order: [Resource] = []
        for line in lines {
            let record = try decoder.decode(LogRecord.self, from: Data(line))
            let resource = Resource(host: record.host, service: Self.serviceName(of: record))
            if groups[resource] == nil { order.append(resource) }
            groups[resource, default: []].append(LogRecordJSON(record))
        }
        let request = ExportLogsServiceRequest(resourceLogs: order.map { resource in
            ResourceLogs(
                resource: .init(attributes: [.string("host.name", resource.host), .string("service.name", resource.service)]),
                scopeLogs: [ScopeLogs(scope: .init(name: "logshipd", version: LogShipVersion.current), logRecords: groups[resource]!)])
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(request))
    }

    /// The service a record comes from, as the host vouches for it: a journal record's unit, else the process
    /// name the kernel reported. A sender's syslog tag or `systemd_unit` field is its own word, kept as an attribute.
    static func serviceName(of record: LogRecord) -> String {
        record.vouchedUnit ?? record.peer?.comm ?? "unknown"
    }

    /// OpenTelemetry's severity for a syslog severity; a crash report is FATAL whatever its severity.
    static func severity(of record: LogRecord) -> (number: Int, text: String) {
        if record.priority == .crash { return (21, "FATAL") }
        switch record.severity.rawValue {
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

        init(_ record: LogRecord) {
            let nanoseconds = String(record.timestamp.unixNanoseconds)
            timeUnixNano = nanoseconds
            // When logshipd took it in is not kept apart from the record's own time; the record's time is the
            // nearest it knows.
            observedTimeUnixNano = nanoseconds
            (severityNumber, severityText) = OTLPEncoder.severity(of: record)
            body = AnyValue(stringValue: record.message)
            var attributes: [KeyValue] = [
                .string("logship.source", record.source.rawValue), .string("logship.priority", record.priority.description),
                .int("syslog.severity", Int64(record.severity.rawValue)),
            ]
            if let peer = record.peer {
                attributes += [.int("process.pid", Int64(peer.pid)), .int("user.id", Int64(peer.uid)), .int("group.id", Int64(peer.gid))]
                if let comm = peer.comm { attributes.append(.string("process.executable.name", comm)) }
            }
            if let unit = record.vouchedUnit { attributes.append(.string("systemd.unit", unit)) }
            if record.truncated { attributes.append(.bool("logship.truncated", true)) }
            for (key, value) in record.fieldsBesideVouchedUnit {
                attributes.append(.string(OTLPAttributeNames.attribute(forField: key), value))
            }
            self.attributes = attributes
        }
    }

    private struct KeyValue: Encodable {
        var key: String
        var value: AnyValue

        static func string(_ key: String, _ value: String) -> KeyValue { KeyValue(key: key, value: AnyValue(stringValue: value)) }
        static func int(_ key: String, _ value: Int64) -> KeyValue { KeyValue(key: key, value: AnyValue(intValue: String(value))) }
        static func bool(_ key: String, _ value: Bool) -> KeyValue { KeyValue(key: key, value: AnyValue(boolValue: value)) }
    }

    /// One of `stringValue`, `intValue` (a string, as OTLP JSON writes 64-bit integers) or `boolValue`.
    private struct AnyValue: Encodable {
        var stringValue: String?
        var intValue: String?
        var boolValue: Bool?
    }
}
