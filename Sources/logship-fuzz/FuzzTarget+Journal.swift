import Foundation
import LogShipRecord

/// What must hold for any journal entry: its mapping to a record never fails, only journald's own fields make
/// a crash report, and the record survives NDJSON.
///
/// The stream is read as an entry: each `NAME=value` line (a valid journal field name) is a field, cut at the
/// field limit as the reader's data threshold cuts it; the other lines are the `MESSAGE` when there is none. The
/// first input byte's low two bits add the fields a trusted sender carries (the kernel, PID 1 as root,
/// systemd-coredump as root), so that random text is also tried as theirs.
extension FuzzTarget {
    static func checkJournalMapping(_ input: [UInt8]) {
        let limit = 16 + Int(input[0]) * 4
        var fields = journalFields(Array(input.dropFirst(2)), limit: limit)
        switch input[0] % 4 {
        case 1: fields["_TRANSPORT"] = Array("kernel".utf8)
        case 2: fields.merge(["_PID": Array("1".utf8), "_UID": Array("0".utf8)]) { $1 }
        case 3:
            fields.merge([
                "_UID": Array("0".utf8), "_COMM": Array("systemd-coredum".utf8),
                "MESSAGE_ID": Array(CrashEvidence.coredumpMessageID.utf8),
            ]) { $1 }
        default: break
        }
        let entry = JournalEntry(realtime: 1_795_255_200_000_000, fields: fields)
        let mapper = JournalRecordMapper(
            selection: .init(), hostname: "fuzz", extraFields: ["CRASH_REASON", "CRASH_UNIT"], maximumFieldBytes: limit)
        guard let record = mapper.record(for: entry) else {
            preconditionFailure("an entry was left out with nothing selected away")
        }
        checkJournalRecord(record, of: entry)

        // Crash reports pass the strictest min_priority; nothing else below emerg does.
        var strict = mapper
        strict.selection.leastImportant = .emergency
        let strictRecord = strict.record(for: entry)
        precondition(
            record.priority == .crash
                ? strictRecord == record : (strictRecord == nil) == (record.severity > .emergency),
            "min_priority holds back a crash report, or lets another record through")

        // What any sender writes, without what journald records of it, is never a crash report.
        let senderOnly = JournalEntry(realtime: entry.realtime, fields: fields.filter { !$0.key.hasPrefix("_") })
        let spoofed = mapper.record(for: senderOnly)
        precondition(spoofed != nil && spoofed?.priority != .crash, "a sender's own fields made a crash report")
        checkJournalRecord(spoofed!, of: senderOnly)
    }

    /// The record's class agrees with journald's fields and its crash_* fields, and it survives NDJSON.
    static func checkJournalRecord(_ record: LogRecord, of entry: JournalEntry) {
        let isCrash = record.priority == .crash
        precondition(!isCrash || isVouched(entry), "a crash report journald does not vouch for")
        precondition(
            isCrash == (record.fields["crash_reason"] != nil), "crash_reason without crash, or crash without it")
        precondition(
            isCrash || record.priority == PriorityClass(severity: record.severity), "a class not its severity's")
        if let pid = record.fields["crash_pid"] {
            precondition(Int32(pid).map { $0 > 0 } == true, "crash_pid is no pid: \(pid)")
        }
        let line = record.ndjsonLine
        guard let decoded = try? JSONDecoder().decode(LogRecord.self, from: Data(line)) else {
            preconditionFailure("the NDJSON line does not decode: \(String(decoding: line, as: UTF8.self))")
        }
        precondition(decoded == record, "the journal record changed on its way through NDJSON")
    }

    /// Whether journald's fields name a sender that may report a crash, said independently of ``CrashEvidence``:
    /// the kernel, PID 1 as root, or systemd-coredump as root or from its own service.
    static func isVouched(_ entry: JournalEntry) -> Bool {
        let text = { (name: String) in entry.fields[name].map { String(decoding: $0, as: UTF8.self) } }
        if text("_TRANSPORT") == "kernel" { return true }
        if text("_PID") == "1" && text("_UID").flatMap({ UInt32($0) }) == 0 { return true }
        let isCoredumpProgram =
            text("_COMM") == "systemd-coredum" || text("_EXE")?.hasSuffix("/systemd-coredump") == true
        let isPrivileged =
            text("_UID").flatMap({ UInt32($0) }) == 0 || text("_SYSTEMD_UNIT")?.hasPrefix("systemd-coredump@") == true
        return text("MESSAGE_ID") == CrashEvidence.coredumpMessageID && isCoredumpProgram && isPrivileged
    }

    /// The entry's fields from `stream`: `NAME=value` lines, and the rest as the message; each value at most
    /// `limit` bytes with its name, as the reader reads it.
    static func journalFields(_ stream: [UInt8], limit: Int) -> [String: [UInt8]] {
        var fields: [String: [UInt8]] = [:]
        var message: [[UInt8]] = []
        for line in stream.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            guard let equals = line.firstIndex(of: UInt8(ascii: "=")), isFieldName(line[..<equals]) else {
                message.append(Array(line))
                continue
            }
            let name = String(decoding: line[..<equals], as: UTF8.self)
            fields[name] = Array(line[(equals + 1)...].prefix(max(0, limit - name.utf8.count - 1)))
        }
        if fields["MESSAGE"] == nil {
            fields["MESSAGE"] = Array(Array(message.joined(separator: [UInt8(ascii: "\n")])).prefix(limit - 8))
        }
        return fields
    }

    /// Upper-case letters, digits and underscores, not starting with a digit, at most 64 bytes: journald's rule.
    static func isFieldName(_ name: ArraySlice<UInt8>) -> Bool {
        guard let first = name.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first), name.count <= 64 else {
            return false
        }
        return name.allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "_")
        }
    }
}
