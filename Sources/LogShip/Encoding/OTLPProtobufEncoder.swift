import LogShipRecord
import NIOCore

/// OTLP/HTTP logs in protobuf, OTLP/HTTP's default encoding (`upload.format: otlp`): an `ExportLogsServiceRequest`
/// (`application/x-protobuf`, POST `/v1/logs`) with the records, resources and attributes of ``OTLPJSONEncoder``.
///
/// Written by hand in the wire format of OpenTelemetry's `logs.proto`, straight from the spooled lines
/// (``RecordLine``): each string's escapes undone as it is copied, no message built per record. Fields are written
/// in field-number order and those at their default value left out, as protobuf's own encoders do.
struct OTLPProtobufEncoder: RecordEncoder {
    var contentType: String { "application/x-protobuf" }
    var defaultPath: String { "/v1/logs" }

    func encodeBuffer(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> ByteBuffer {
        let records = try RecordLine.read(batch: lines)
        let ids = RecordIDText(ids)
        // About the line's length: attribute names and numbers in place of the line's keys.
        var body = ByteBuffer.body(
            expected: lines.reduce(64) { $0 + $1.count + 24 },
            largestReserve: zip(lines, records).reduce(0) {
                max($0, 2 * $1.0.count + 128, Self.reserve($1.0.count, $1.1) + ids.maximumLength)
            })
        for group in OTLPResource.groups(records, lines: lines) {
            // ExportLogsServiceRequest.resource_logs = 1
            let resourceLogs = body.beginMessage(1)
            let first = group.members[0]
            lines[first].withUnsafeBufferPointer { line in
                body.write(reserving: 2 * line.count + 128) { writer in
                    Self.writeResource(OTLPResource(records[first]), of: line, to: &writer)
                }
            }
            // ResourceLogs.scope_logs = 2
            let scopeLogs = body.beginMessage(2)
            body.writeBytes(Self.scope)
            for index in group.members {
                lines[index].withUnsafeBufferPointer { line in
                    let record = records[index]
                    body.write(reserving: Self.reserve(line.count, record) + ids.maximumLength) { writer in
                        Self.write(record, id: ids, index, of: line, to: &writer)
                    }
                }
            }
            body.endMessage(scopeLogs)
            body.endMessage(resourceLogs)
        }
        return body
    }

    /// The most a record's `LogRecord` takes: each string of the line at most once, some 250 bytes of names and
    /// numbers, and a key's prefix and lengths per field.
    private static func reserve(_ lineLength: Int, _ record: RecordLine) -> Int {
        lineLength + 512 + 32 * record.fieldCount
    }

    /// `ScopeLogs.scope = 1`: an `InstrumentationScope` with logshipd's name and version.
    private static let scope: [UInt8] = {
        let name = Array("logshipd".utf8), version = Array(LogShipVersion.current.utf8)
        let contents = [0x0A, UInt8(name.count)] + name + [0x12, UInt8(version.count)] + version
        return [0x0A, UInt8(contents.count)] + contents
    }()

    /// `ResourceLogs.resource = 1`: a `Resource` with `host.name` and `service.name`.
    private static func writeResource(
        _ resource: OTLPResource, of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter
    ) {
        let host = OTLPAnyValue.text(resource.host, of: line)
        let service = resource.service.map { OTLPAnyValue.text($0, of: line) } ?? .constant("unknown")
        let hostSize = host.keyValueSize(key: "host.name"), serviceSize = service.keyValueSize(key: "service.name")
        writer.writeLengthDelimited(
            1, length: BodyWriter.fieldSize(length: hostSize) + BodyWriter.fieldSize(length: serviceSize))
        host.write(key: "host.name", size: hostSize, field: 1, of: line, to: &writer)
        service.write(key: "service.name", size: serviceSize, field: 1, of: line, to: &writer)
    }

    /// `ScopeLogs.log_records = 2`: one `LogRecord`.
    private static func write(
        _ record: RecordLine, id ids: RecordIDText, _ index: Int, of line: UnsafeBufferPointer<UInt8>,
        to writer: inout BodyWriter
    ) {
        let logRecord = writer.beginMessage(2)
        // The record's own time, which is also when logshipd observed it as near as it knows.
        let nanoseconds = record.timestamp.unixNanoseconds
        if nanoseconds != 0 { writer.writeFixed64Field(1, nanoseconds) }
        let severity = OTLPSeverity(record)
        writer.writeVarintField(2, UInt64(severity.number))
        writer.writeStringField(3, severity.text)
        // body = 5: an AnyValue with string_value = 1.
        let message = OTLPAnyValue.text(record.message, of: line)
        writer.writeLengthDelimited(5, length: message.valueSize)
        message.writeValue(of: line, to: &writer)

        // attributes = 6, in the order of the JSON encoding.
        writeIDAttribute(ids, index, to: &writer)
        writeAttribute("logship.source", .constant(record.source.staticName), of: line, to: &writer)
        writeAttribute("logship.priority", .constant(record.priority.staticName), of: line, to: &writer)
        writeAttribute("syslog.severity", .integer(Int64(record.severity.rawValue)), of: line, to: &writer)
        if let peer = record.peer {
            writeAttribute("process.pid", .integer(decimal(line[peer.pid])), of: line, to: &writer)
            writeAttribute("user.id", .integer(decimal(line[peer.uid])), of: line, to: &writer)
            writeAttribute("group.id", .integer(decimal(line[peer.gid])), of: line, to: &writer)
            if let comm = peer.comm {
                writeAttribute("process.executable.name", .text(comm, of: line), of: line, to: &writer)
            }
        }
        if let unit = record.vouchedUnit {
            writeAttribute("systemd.unit", .text(unit, of: line), of: line, to: &writer)
        }
        if record.truncated { writeAttribute("logship.truncated", .bool(true), of: line, to: &writer) }
        for field in record.fieldsBesideVouchedUnit(in: line) {
            let value = OTLPAnyValue.text(field.value, of: line)
            let key = OTLPAnyValue.text(field.key, of: line)
            let prefix: StaticString = OTLPAttributeNames.isReserved(field.key, of: line)
                ? OTLPAttributeNames.fieldPrefix : ""
            // An empty key is a string at its default: left out.
            let keyLength = prefix.utf8CodeUnitCount + key.length
            let size = (keyLength > 0 ? BodyWriter.fieldSize(length: keyLength) : 0)
                + BodyWriter.fieldSize(length: value.valueSize)
            writer.writeLengthDelimited(6, length: size)
            if keyLength > 0 {
                writer.writeLengthDelimited(1, length: keyLength)
                writer.write(prefix)
                key.writeText(of: line, to: &writer)
            }
            writer.writeLengthDelimited(2, length: value.valueSize)
            value.writeValue(of: line, to: &writer)
        }
        if nanoseconds != 0 { writer.writeFixed64Field(11, nanoseconds) }
        writer.endMessage(logRecord)
    }

    /// `LogRecord.attributes = 6`: one `KeyValue` with a name logshipd sets.
    private static func writeAttribute(
        _ key: StaticString, _ value: OTLPAnyValue, of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter
    ) {
        value.write(key: key, size: value.keyValueSize(key: key), field: 6, of: line, to: &writer)
    }

    /// `LogRecord.attributes = 6`: `log.record.uid`, the record's id, a string.
    private static func writeIDAttribute(_ ids: RecordIDText, _ index: Int, to writer: inout BodyWriter) {
        let key: StaticString = "log.record.uid"
        let length = ids.length(index)
        let valueSize = BodyWriter.fieldSize(length: length)
        writer.writeLengthDelimited(
            6, length: BodyWriter.fieldSize(length: key.utf8CodeUnitCount) + BodyWriter.fieldSize(length: valueSize))
        writer.writeStringField(1, key)
        writer.writeLengthDelimited(2, length: valueSize)
        writer.writeLengthDelimited(1, length: length)
        writer.write(ids, index)
    }

    /// A number the line holds in decimal, checked to fit when the line was read.
    private static func decimal(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int64 {
        var magnitude: Int64 = 0
        for digit in digits where digit != UInt8(ascii: "-") {
            magnitude = magnitude * 10 + Int64(digit - UInt8(ascii: "0"))
        }
        return digits.first == UInt8(ascii: "-") ? -magnitude : magnitude
    }
}
