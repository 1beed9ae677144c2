import LogShipRecord
import NIOCore

/// OTLP/HTTP logs with JSON encoding (`upload.format: otlp-json`): an `ExportLogsServiceRequest`
/// (`application/json`, POST `/v1/logs`), records grouped by resource (`host.name`, `service.name`).
///
/// The resource and the attributes named in ``OTLPAttributeNames`` come from what the host vouches for; a sender's
/// field is an attribute of its own name, or `logship.field.<key>` where that name is logshipd's.
///
/// Follows the OTLP JSON mapping: 64-bit integers as strings, enums as numbers, lower camel case names. Written
/// straight from the spooled lines (``RecordLine``), their strings copied as they are escaped there.
struct OTLPJSONEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/v1/logs" }

    func encodeBuffer(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> ByteBuffer {
        let records = try RecordLine.read(batch: lines)
        let ids = RecordIDText(ids)
        let groups = OTLPResource.groups(records, lines: lines)
        // Each record's own bytes once, and some 400 of names and punctuation.
        var body = ByteBuffer.body(
            expected: lines.reduce(256) { $0 + $1.count + 448 },
            largestReserve: zip(lines, records).reduce(0) {
                max($0, 2 * $1.0.count + 256, Self.reserve($1.0.count, $1.1) + ids.maximumLength)
            })
        body.writeStaticString(#"{"resourceLogs":["#)
        for (number, group) in groups.enumerated() {
            if number > 0 { body.writeInteger(UInt8(ascii: ",")) }
            let first = group.members[0]
            lines[first].withUnsafeBufferPointer { line in
                let resource = OTLPResource(records[first])
                body.write(reserving: 2 * line.count + 256) { writer in
                    writer.write(#"{"resource":{"attributes":[{"key":"host.name","value":{"stringValue":"#)
                    writer.writeJSONString(resource.host, of: line)
                    writer.write(#"}},{"key":"service.name","value":{"stringValue":"#)
                    if let service = resource.service {
                        writer.writeJSONString(service, of: line)
                    } else {
                        writer.write(#""unknown""#)
                    }
                    writer.write(#"}}]},"scopeLogs":[{"logRecords":["#)
                }
            }
            for (position, index) in group.members.enumerated() {
                lines[index].withUnsafeBufferPointer { line in
                    let record = records[index]
                    body.write(reserving: Self.reserve(line.count, record) + ids.maximumLength) { writer in
                        if position > 0 { writer.write(UInt8(ascii: ",")) }
                        Self.write(record, id: ids, index, of: line, to: &writer)
                    }
                }
            }
            body.writeStaticString(#"],"scope":{"name":"logshipd","version":"#)
            body.writeBytes(Self.quotedVersion)
            body.writeStaticString("}}]}")
        }
        body.writeStaticString("]}")
        return body
    }

    /// The most a record's `LogRecord` takes: each string of the line at most once, some 700 bytes of names and
    /// punctuation, and some 50 per field.
    private static func reserve(_ lineLength: Int, _ record: RecordLine) -> Int {
        lineLength + 1024 + 64 * record.fieldCount
    }

    /// logshipd's version as a JSON string.
    private static let quotedVersion: [UInt8] = Array("\"\(LogShipVersion.current)\"".utf8)

    /// One `LogRecord`, its keys in sorted order; the record's id is the `log.record.uid` attribute.
    private static func write(
        _ record: RecordLine, id ids: RecordIDText, _ index: Int, of line: UnsafeBufferPointer<UInt8>,
        to writer: inout BodyWriter
    ) {
        writer.write(#"{"attributes":[{"key":"log.record.uid","value":{"stringValue":""#)
        writer.write(ids, index)
        writer.write(#""}},{"key":"logship.source","value":{"stringValue":""#)
        writer.write(record.source.staticName)
        writer.write(#""}},{"key":"logship.priority","value":{"stringValue":""#)
        writer.write(record.priority.staticName)
        writer.write(#""}},{"key":"syslog.severity","value":{"intValue":""#)
        writer.writeDecimal(UInt64(record.severity.rawValue))
        writer.write(#""}}"#)
        if let peer = record.peer {
            writeAttribute("process.pid", integer: line[peer.pid], to: &writer)
            writeAttribute("user.id", integer: line[peer.uid], to: &writer)
            writeAttribute("group.id", integer: line[peer.gid], to: &writer)
            if let comm = peer.comm {
                writer.write(#",{"key":"process.executable.name","value":{"stringValue":"#)
                writer.writeJSONString(comm, of: line)
                writer.write("}}")
            }
        }
        if let unit = record.vouchedUnit {
            writer.write(#",{"key":"systemd.unit","value":{"stringValue":"#)
            writer.writeJSONString(unit, of: line)
            writer.write("}}")
        }
        if record.truncated {
            writer.write(#",{"key":"logship.truncated","value":{"boolValue":true}}"#)
        }
        for field in record.fieldsBesideVouchedUnit(in: line) {
            writer.write(#",{"key":""#)
            if OTLPAttributeNames.isReserved(field.key, of: line) { writer.write(OTLPAttributeNames.fieldPrefix) }
            writer.write(line[field.key.range])
            writer.write(#"","value":{"stringValue":"#)
            writer.writeJSONString(field.value, of: line)
            writer.write("}}")
        }
        writer.write(#"],"body":{"stringValue":"#)
        writer.writeJSONString(record.message, of: line)
        // When logshipd took it in is not kept apart from the record's own time; the record's time is the nearest
        // it knows.
        let nanoseconds = record.timestamp.unixNanoseconds
        writer.write(#"},"observedTimeUnixNano":""#)
        writer.writeDecimal(nanoseconds)
        let severity = OTLPSeverity(record)
        writer.write(#"","severityNumber":"#)
        writer.writeDecimal(UInt64(severity.number))
        writer.write(#","severityText":""#)
        writer.write(severity.text)
        writer.write(#"","timeUnixNano":""#)
        writer.writeDecimal(nanoseconds)
        writer.write(#""}"#)
    }

    private static func writeAttribute(
        _ key: StaticString, integer digits: Slice<UnsafeBufferPointer<UInt8>>, to writer: inout BodyWriter
    ) {
        writer.write(#",{"key":""#)
        writer.write(key)
        writer.write(#"","value":{"intValue":""#)
        writer.write(digits)
        writer.write(#""}}"#)
    }
}
