import LogShipRecord
import NIOCore

/// OTLP/HTTP logs with JSON encoding: an `ExportLogsServiceRequest` (`application/json`, POST `/v1/logs`), records
/// grouped by resource (`host.name`, `service.name`).
///
/// The resource and the attributes named in ``OTLPAttributeNames`` come from what the host vouches for; a sender's
/// field is an attribute of its own name, or `logship.field.<key>` where that name is logshipd's.
///
/// Follows the OTLP JSON mapping: 64-bit integers as strings, enums as numbers, lower camel case names. Written
/// straight from the spooled lines (``RecordLine``), their strings copied as they are escaped there.
struct OTLPEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/v1/logs" }

    func encode(_ lines: [ArraySlice<UInt8>]) throws -> [UInt8] {
        Array(try encodeBuffer(lines).readableBytesView)
    }

    func encodeBuffer(_ lines: [ArraySlice<UInt8>]) throws -> ByteBuffer {
        let records = try RecordLine.read(batch: lines)
        let groups = ResourceGroups(records)
        // Each record's own bytes once, and some 700 of names and punctuation.
        var body = ByteBufferAllocator().buffer(capacity: lines.reduce(256) { $0 + $1.count + 768 })
        body.writeStaticString(#"{"resourceLogs":["#)
        for (number, group) in groups.groups.enumerated() {
            if number > 0 { body.writeInteger(UInt8(ascii: ",")) }
            body.writeStaticString(#"{"resource":{"attributes":[{"key":"host.name","value":{"stringValue":"#)
            body.writeJSONString(group.resource.host)
            body.writeStaticString(#"}},{"key":"service.name","value":{"stringValue":"#)
            body.writeJSONString(group.resource.service)
            body.writeStaticString(#"}}]},"scopeLogs":[{"logRecords":["#)
            for (position, index) in group.members.enumerated() {
                if position > 0 { body.writeInteger(UInt8(ascii: ",")) }
                Self.write(records[index], to: &body)
            }
            body.writeStaticString(#"],"scope":{"name":"logshipd","version":"#)
            body.writeBytes(Self.quotedVersion)
            body.writeStaticString("}}]}")
        }
        body.writeStaticString("]}")
        return body
    }

    /// logshipd's version as a JSON string.
    private static let quotedVersion: [UInt8] = Array("\"\(LogShipVersion.current)\"".utf8)

    /// One `LogRecord`, its keys in sorted order.
    private static func write(_ record: RecordLine, to body: inout ByteBuffer) {
        body.writeStaticString(#"{"attributes":["#)
        writeAttribute("logship.source", string: record.source.staticName, to: &body)
        body.writeInteger(UInt8(ascii: ","))
        writeAttribute("logship.priority", string: record.priority.staticName, to: &body)
        body.writeStaticString(#",{"key":"syslog.severity","value":{"intValue":""#)
        body.writeDecimal(UInt64(record.severity.rawValue))
        body.writeStaticString(#""}}"#)
        if let peer = record.peer {
            writeAttribute("process.pid", integer: peer.pid, to: &body)
            writeAttribute("user.id", integer: peer.uid, to: &body)
            writeAttribute("group.id", integer: peer.gid, to: &body)
            if let comm = peer.comm {
                body.writeStaticString(#",{"key":"process.executable.name","value":{"stringValue":"#)
                body.writeJSONString(comm)
                body.writeStaticString("}}")
            }
        }
        if let unit = record.vouchedUnit {
            body.writeStaticString(#",{"key":"systemd.unit","value":{"stringValue":"#)
            body.writeJSONString(unit)
            body.writeStaticString("}}")
        }
        if record.truncated {
            body.writeStaticString(#",{"key":"logship.truncated","value":{"boolValue":true}}"#)
        }
        for (key, value) in record.fieldsBesideVouchedUnit {
            body.writeStaticString(#",{"key":""#)
            if OTLPAttributeNames.isReserved(key) { body.writeStaticString(OTLPAttributeNames.fieldPrefix) }
            body.writeBytes(key.escaped)
            body.writeStaticString(#"","value":{"stringValue":"#)
            body.writeJSONString(value)
            body.writeStaticString("}}")
        }
        body.writeStaticString(#"],"body":{"stringValue":"#)
        body.writeJSONString(record.message)
        // When logshipd took it in is not kept apart from the record's own time; the record's time is the nearest
        // it knows.
        let nanoseconds = record.timestamp.unixNanoseconds
        body.writeStaticString(#"},"observedTimeUnixNano":""#)
        body.writeDecimal(nanoseconds)
        let severity = severity(priority: record.priority, severity: record.severity)
        body.writeStaticString(#"","severityNumber":"#)
        body.writeDecimal(UInt64(severity.number))
        body.writeStaticString(#","severityText":""#)
        body.writeStaticString(severity.text)
        body.writeStaticString(#"","timeUnixNano":""#)
        body.writeDecimal(nanoseconds)
        body.writeStaticString(#""}"#)
    }

    private static func writeAttribute(_ key: StaticString, string value: StaticString, to body: inout ByteBuffer) {
        body.writeStaticString(#"{"key":""#)
        body.writeStaticString(key)
        body.writeStaticString(#"","value":{"stringValue":""#)
        body.writeStaticString(value)
        body.writeStaticString(#""}}"#)
    }

    private static func writeAttribute(_ key: StaticString, integer digits: ArraySlice<UInt8>, to body: inout ByteBuffer) {
        body.writeStaticString(#",{"key":""#)
        body.writeStaticString(key)
        body.writeStaticString(#"","value":{"intValue":""#)
        body.writeBytes(digits)
        body.writeStaticString(#""}}"#)
    }

    /// OpenTelemetry's severity for a syslog severity; a crash report is FATAL whatever its severity.
    static func severity(priority: PriorityClass, severity: Severity) -> (number: Int, text: StaticString) {
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
