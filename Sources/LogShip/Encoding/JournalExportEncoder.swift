import Foundation

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
        let decoder = JSONDecoder()
        var body: [UInt8] = []
        for line in lines {
            let record = try decoder.decode(LogRecord.self, from: Data(line))
            Self.append(record, to: &body)
        }
        return body
    }

    static func append(_ record: LogRecord, to body: inout [UInt8]) {
        var fields: [(String, String)] = [
            ("__REALTIME_TIMESTAMP", String(record.timestamp.microsecondsSinceEpoch)),
            ("MESSAGE", record.message),
            ("PRIORITY", String(record.severity.rawValue)),
            ("_HOSTNAME", record.host),
            ("LOGSHIP_PRIORITY_CLASS", record.priority.description),
            ("LOGSHIP_SOURCE", record.source.rawValue),
        ]
        // The sender's identity as the kernel reported it: what journald itself would have recorded.
        if let peer = record.peer {
            fields += [("_PID", String(peer.pid)), ("_UID", String(peer.uid)), ("_GID", String(peer.gid))]
            if let comm = peer.comm { fields.append(("_COMM", comm)) }
        }
        if let unit = record.vouchedUnit { fields.append(("_SYSTEMD_UNIT", unit)) }
        if record.truncated { fields.append(("LOGSHIP_TRUNCATED", "1")) }
        for (key, value) in record.fieldsBesideVouchedUnit {
            fields.append((JournalFieldNames.name(forField: key), value))
        }
        for (name, value) in fields {
            appendField(name, Array(value.utf8), to: &body)
        }
        body.append(UInt8(ascii: "\n"))
    }

    /// Appends one `NAME=value` line, or for a value with a newline or other control bytes the binary-safe form
    /// (the name, a newline, the length as 64-bit little endian, the bytes, a newline). An entry ends with an
    /// empty line.
    public static func appendField(_ name: String, _ value: [UInt8], to body: inout [UInt8]) {
        body += Array(name.utf8)
        if value.contains(where: { $0 < 0x20 && $0 != 0x09 }) {
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
