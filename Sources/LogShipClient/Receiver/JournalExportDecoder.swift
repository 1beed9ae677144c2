#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads the systemd journal export format (`application/vnd.fdo.journal`, what `systemd-journal-upload` sends):
/// entries of `NAME=value` lines, or `NAME`, a newline, a 64-bit little-endian length and that many bytes for
/// binary-safe values, each entry ended by an empty line.
enum JournalExportDecoder {
    /// The entries in `body`, each a field map; `malformed` counts entries that could not be read.
    static func entries(in body: some Collection<UInt8>) -> (entries: [[String: [UInt8]]], malformed: Int) {
        let bytes = Array(body)
        var entries: [[String: [UInt8]]] = []
        var malformed = 0
        var current: [String: [UInt8]] = [:]
        var index = 0
        while index < bytes.count {
            guard let lineEnd = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) else {
                malformed += 1
                break
            }
            let line = bytes[index..<lineEnd]
            if line.isEmpty {
                if !current.isEmpty { entries.append(current) }
                current = [:]
                index = lineEnd + 1
            } else if let equals = line.firstIndex(of: UInt8(ascii: "=")) {
                current[String(decoding: line[..<equals], as: UTF8.self)] = Array(line[(equals + 1)...])
                index = lineEnd + 1
            } else {
                // A binary-safe field: the name, then its length and bytes, then a newline.
                let lengthStart = lineEnd + 1
                guard lengthStart + 8 <= bytes.count else {
                    malformed += 1
                    break
                }
                let length = bytes[lengthStart..<lengthStart + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
                let valueStart = lengthStart + 8
                guard length >= 0, length <= bytes.count - valueStart else {
                    malformed += 1
                    break
                }
                current[String(decoding: line, as: UTF8.self)] = Array(bytes[valueStart..<valueStart + length])
                index = valueStart + length + 1
            }
        }
        if !current.isEmpty { entries.append(current) }
        return (entries, malformed)
    }

    /// The names an entry's record is made of; the others are its fields.
    private static let recordNames: Set<String> = [
        "MESSAGE", "PRIORITY", "_HOSTNAME", "_PID", "_UID", "_GID", "_COMM", "_SYSTEMD_UNIT",
        "LOGSHIP_PRIORITY_CLASS", "LOGSHIP_SOURCE", "LOGSHIP_TRUNCATED", "LOGSHIP_RECORD_ID",
    ]

    /// An export entry as a record: its message, priority, time and host, the sender as journald's `_PID`, `_UID`,
    /// `_GID` and `_COMM` name it, and its other fields (``JournalFieldNames/field(forName:)``; `__` addresses
    /// such as `__CURSOR` left out). The class and source are logshipd's own (`LOGSHIP_PRIORITY_CLASS`,
    /// `LOGSHIP_SOURCE`) when the entry carries them, else the class its severity maps to and the journal.
    static func record(from fields: [String: [UInt8]]) -> LogRecord {
        func text(_ name: String) -> String? { fields[name].map { String(decoding: $0, as: UTF8.self) } }
        let severity = text("PRIORITY").flatMap { Severity(text: $0) } ?? .informational
        let priority = text("LOGSHIP_PRIORITY_CLASS").flatMap { PriorityClass(name: $0) }
            ?? PriorityClass(severity: severity)
        let microseconds = text("__REALTIME_TIMESTAMP").flatMap { Int64($0) } ?? 0
        var peer: PeerCredentials?
        if let pid = text("_PID").flatMap({ Int32($0) }), let uid = text("_UID").flatMap({ UInt32($0) }),
            let gid = text("_GID").flatMap({ UInt32($0) })
        {
            peer = PeerCredentials(pid: pid, uid: uid, gid: gid, comm: text("_COMM"))
        }
        var recordFields = RecordFields(
            fields.lazy.filter { !recordNames.contains($0.key) && !$0.key.hasPrefix("__") }
                .map { (JournalFieldNames.field(forName: $0.key), String(decoding: $0.value, as: UTF8.self)) })
        // journald's unit, set last: a sender's `SYSTEMD_UNIT` in another uploader's entry does not replace it.
        if let unit = text("_SYSTEMD_UNIT") { recordFields["systemd_unit"] = unit }
        let source = text("LOGSHIP_SOURCE").flatMap(LogRecord.Source.init(rawValue:)) ?? .journal
        return LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: microseconds), priority: priority, severity: severity,
            host: text("_HOSTNAME") ?? "", source: source, message: text("MESSAGE") ?? "", peer: peer,
            fields: recordFields, truncated: text("LOGSHIP_TRUNCATED") == "1")
    }

    /// The record id logshipd gave the entry (`LOGSHIP_RECORD_ID`), if it carries one.
    static func recordID(from fields: [String: [UInt8]]) -> String? {
        fields["LOGSHIP_RECORD_ID"].map { String(decoding: $0, as: UTF8.self) }
    }
}
