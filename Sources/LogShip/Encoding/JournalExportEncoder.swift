import LogShipRecord
import NIOCore

/// The systemd journal export format (`application/vnd.fdo.journal`, POST `/upload`), so that
/// `systemd-journal-remote` can be the receiver.
///
/// A record's own parts are journald's names (`MESSAGE`, `PRIORITY`, `_PID`, a journal record's `_SYSTEMD_UNIT`…)
/// and logshipd's (`LOGSHIP_*`); its fields are named by ``JournalFieldNames``, which keeps a sender's field from
/// taking any of those names. A value with a newline or other control bytes is written in the binary-safe form (the
/// name, a newline, its length as 64-bit little endian, the bytes).
public struct JournalExportEncoder: RecordEncoder {
    public var contentType: String { "application/vnd.fdo.journal" }
    public var defaultPath: String { "/upload" }

    public func encodeBuffer(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> ByteBuffer {
        let records = try RecordLine.read(batch: lines)
        let ids = RecordIDText(ids)
        // About the line's length: names in place of the line's keys.
        var body = ByteBuffer.body(
            expected: lines.reduce(0) { $0 + $1.count + 16 },
            largestReserve: zip(lines, records).reduce(0) { max($0, Self.reserve($1.0.count, $1.1)) }
                + ids.maximumLength)
        for (index, record) in records.enumerated() {
            lines[index].withUnsafeBufferPointer { line in
                body.write(reserving: Self.reserve(line.count, record) + ids.maximumLength) { writer in
                    Self.write(record, id: ids, index, of: line, to: &writer)
                }
            }
        }
        return body
    }

    /// The most a record's entry takes: each string at most once, unescaped (never longer); names, numbers and
    /// binary-safe lengths.
    private static func reserve(_ lineLength: Int, _ record: RecordLine) -> Int {
        lineLength + 512 + 96 * record.fieldCount
    }

    /// One entry; the record's id is `LOGSHIP_RECORD_ID`.
    private static func write(
        _ record: RecordLine, id ids: RecordIDText, _ index: Int, of line: UnsafeBufferPointer<UInt8>,
        to writer: inout BodyWriter
    ) {
        writer.write("__REALTIME_TIMESTAMP=")
        writer.writeDecimal(record.timestamp.microsecondsSinceEpoch)
        writer.write(UInt8(ascii: "\n"))
        writeField("MESSAGE", record.message, of: line, to: &writer)
        writer.write("PRIORITY=")
        writer.writeDecimal(UInt64(record.severity.rawValue))
        writer.write(UInt8(ascii: "\n"))
        writeField("_HOSTNAME", record.host, of: line, to: &writer)
        writer.write("LOGSHIP_PRIORITY_CLASS=")
        writer.write(record.priority.staticName)
        writer.write("\nLOGSHIP_SOURCE=")
        writer.write(record.source.staticName)
        writer.write("\nLOGSHIP_RECORD_ID=")
        writer.write(ids, index)
        writer.write(UInt8(ascii: "\n"))
        // The sender's identity as the kernel reported it: what journald itself would have recorded.
        if let peer = record.peer {
            writer.write("_PID=")
            writer.write(line[peer.pid])
            writer.write("\n_UID=")
            writer.write(line[peer.uid])
            writer.write("\n_GID=")
            writer.write(line[peer.gid])
            writer.write(UInt8(ascii: "\n"))
            if let comm = peer.comm { writeField("_COMM", comm, of: line, to: &writer) }
        }
        if let unit = record.vouchedUnit { writeField("_SYSTEMD_UNIT", unit, of: line, to: &writer) }
        if record.truncated { writer.write("LOGSHIP_TRUNCATED=1\n") }
        for field in record.fieldsBesideVouchedUnit(in: line) {
            JournalFieldNames.writeName(forField: field.key, of: line, to: &writer)
            writeValue(field.value, of: line, to: &writer)
        }
        writer.write(UInt8(ascii: "\n"))
    }

    private static func writeField(
        _ name: StaticString, _ value: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter
    ) {
        writer.write(name)
        writeValue(value, of: line, to: &writer)
    }

    /// A field's value after its name: `=value`, or for a value with a newline or other control bytes the
    /// binary-safe form (a newline, the length as 64-bit little endian, the bytes); then a newline.
    private static func writeValue(
        _ value: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter
    ) {
        guard value.hasEscapes else {
            // Without escapes a spooled string has no control byte.
            writer.write(UInt8(ascii: "="))
            writer.write(line[value.range])
            writer.write(UInt8(ascii: "\n"))
            return
        }
        // Undone where the binary-safe form puts the value, and moved back if `=` will do.
        let start = writer.count
        writer.write(UInt8(ascii: "\n"))
        writer.skip(8)
        let valueStart = writer.count
        if writer.writeUnescaped(value, of: line) {
            writer.patch(UInt64(writer.count - valueStart), at: start + 1)
        } else {
            writer.move(from: valueStart, by: -8)
            writer.patch(UInt8(ascii: "="), at: start)
        }
        writer.write(UInt8(ascii: "\n"))
    }

    /// Whether a value holds a newline or another control byte (a tab aside), which `NAME=value` cannot carry.
    private static func needsBinarySafeForm(_ value: [UInt8]) -> Bool {
        value.contains { $0 < 0x20 && $0 != 0x09 }
    }

    /// Appends one `NAME=value` line, or for a value with a newline or other control bytes the binary-safe form
    /// (the name, a newline, the length as 64-bit little endian, the bytes, a newline). An entry ends with an
    /// empty line.
    public static func appendField(_ name: String, _ value: [UInt8], to body: inout [UInt8]) {
        body += Array(name.utf8)
        if needsBinarySafeForm(value) {
            body.append(UInt8(ascii: "\n"))
            withUnsafeBytes(of: UInt64(value.count).littleEndian) { body += $0 }
            body += value
        } else {
            body.append(UInt8(ascii: "="))
            body += value
        }
        body.append(UInt8(ascii: "\n"))
    }
}
