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

    public func encode(_ lines: [ArraySlice<UInt8>]) throws -> [UInt8] {
        Array(try encodeBuffer(lines).readableBytesView)
    }

    public func encodeBuffer(_ lines: [ArraySlice<UInt8>]) throws -> ByteBuffer {
        let records = try RecordLine.read(batch: lines)
        var body = ByteBufferAllocator().buffer(capacity: lines.reduce(0) { $0 + $1.count + 256 })
        // Where a value with escapes is undone, and a field's name made: one of each for the whole batch.
        var scratch = Scratch()
        for record in records {
            Self.write(record, to: &body, scratch: &scratch)
        }
        return body
    }

    private struct Scratch {
        var value: [UInt8] = []
        var name: [UInt8] = []
    }

    private static func write(_ record: RecordLine, to body: inout ByteBuffer, scratch: inout Scratch) {
        body.writeStaticString("__REALTIME_TIMESTAMP=")
        body.writeDecimal(record.timestamp.microsecondsSinceEpoch)
        body.writeInteger(UInt8(ascii: "\n"))
        writeField("MESSAGE", record.message, to: &body, scratch: &scratch.value)
        body.writeStaticString("PRIORITY=")
        body.writeDecimal(UInt64(record.severity.rawValue))
        body.writeInteger(UInt8(ascii: "\n"))
        writeField("_HOSTNAME", record.host, to: &body, scratch: &scratch.value)
        body.writeStaticString("LOGSHIP_PRIORITY_CLASS=")
        body.writeStaticString(record.priority.staticName)
        body.writeStaticString("\nLOGSHIP_SOURCE=")
        body.writeStaticString(record.source.staticName)
        body.writeInteger(UInt8(ascii: "\n"))
        // The sender's identity as the kernel reported it: what journald itself would have recorded.
        if let peer = record.peer {
            body.writeStaticString("_PID=")
            body.writeBytes(peer.pid)
            body.writeStaticString("\n_UID=")
            body.writeBytes(peer.uid)
            body.writeStaticString("\n_GID=")
            body.writeBytes(peer.gid)
            body.writeInteger(UInt8(ascii: "\n"))
            if let comm = peer.comm { writeField("_COMM", comm, to: &body, scratch: &scratch.value) }
        }
        if let unit = record.vouchedUnit { writeField("_SYSTEMD_UNIT", unit, to: &body, scratch: &scratch.value) }
        if record.truncated { body.writeStaticString("LOGSHIP_TRUNCATED=1\n") }
        for (key, value) in record.fieldsBesideVouchedUnit {
            scratch.name.removeAll(keepingCapacity: true)
            JournalFieldNames.appendName(forField: key, to: &scratch.name)
            writeField(.field(scratch.name[...]), value, to: &body, scratch: &scratch.value)
        }
        body.writeInteger(UInt8(ascii: "\n"))
    }

    /// A field's name: one of logshipd's, or a sender's field's made by ``JournalFieldNames``.
    private enum Name {
        case own(StaticString)
        case field(ArraySlice<UInt8>)
    }

    private static func writeField(
        _ name: StaticString, _ value: EscapedString, to body: inout ByteBuffer, scratch: inout [UInt8]
    ) {
        writeField(.own(name), value, to: &body, scratch: &scratch)
    }

    /// One field: a value without escapes is its own bytes, none of them a control byte; one with escapes is
    /// undone first, and may need the binary-safe form.
    private static func writeField(_ name: Name, _ value: EscapedString, to body: inout ByteBuffer, scratch: inout [UInt8]) {
        switch name {
        case .own(let name): body.writeStaticString(name)
        case .field(let name): body.writeBytes(name)
        }
        guard value.hasEscapes else {
            body.writeInteger(UInt8(ascii: "="))
            body.writeBytes(value.escaped)
            body.writeInteger(UInt8(ascii: "\n"))
            return
        }
        scratch.removeAll(keepingCapacity: true)
        value.appendUnescaped(to: &scratch)
        if needsBinarySafeForm(scratch) {
            body.writeInteger(UInt8(ascii: "\n"))
            body.writeInteger(UInt64(scratch.count), endianness: .little)
        } else {
            body.writeInteger(UInt8(ascii: "="))
        }
        body.writeBytes(scratch)
        body.writeInteger(UInt8(ascii: "\n"))
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
