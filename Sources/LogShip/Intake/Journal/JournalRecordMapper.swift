/// Turns journal entries into records, and decides which entries to ship.
///
/// The `_`-prefixed fields are set by journald itself from the sender's credentials, which is why `_PID`, `_UID`,
/// `_GID` and `_COMM` may be trusted as the record's identity. systemd-coredump entries are crash reports whatever
/// their `PRIORITY`, with the stack trace in the message and the `COREDUMP_*` fields, but never the core.
struct JournalRecordMapper: Sendable {
    /// `MESSAGE_ID` of systemd-coredump's entries.
    static let coredumpMessageID = "fc2e22bc6ee647b6b90729ab34a250b1"

    /// Fields every record may carry, besides the identity and the message.
    static let standardFields = ["_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER", "_BOOT_ID", "MESSAGE_ID", "CODE_FILE", "CODE_LINE"]

    /// What a coredump entry adds.
    static let coredumpFields = ["COREDUMP_EXE", "COREDUMP_PID", "COREDUMP_SIGNAL_NAME", "COREDUMP_UNIT", "COREDUMP_CMDLINE"]

    /// Fields read for the record itself.
    static let recordFields = ["MESSAGE", "PRIORITY", "_HOSTNAME", "_PID", "_UID", "_GID", "_COMM"]

    /// Which entries are shipped.
    struct Selection: Sendable {
        /// Units to ship; empty ships every unit. A coredump counts as the unit that crashed (`COREDUMP_UNIT`).
        var units: Set<String> = []
        /// Units never shipped (logshipd's own, so that it cannot feed itself).
        var excludedUnits: Set<String> = []
        /// The least important severity shipped (`journal.min_priority`: 0 emerg … 7 debug). Coredumps always go.
        var leastImportant = Severity.debug
    }

    var selection: Selection
    /// Host name for entries without `_HOSTNAME`.
    var hostname: String
    /// Extra fields to carry (`journal.fields`), journal names.
    var extraFields: [String]
    /// The most bytes read of one field, name included (`journal.max_field_bytes`): a value that reaches it was cut.
    var maximumFieldBytes: Int

    /// Every field the reader should fetch for an entry; `COREDUMP_*` only for coredumps.
    func fieldsToRead(isCoredump: Bool) -> [String] {
        Self.recordFields + Self.standardFields + extraFields + (isCoredump ? Self.coredumpFields : [])
    }

    /// The record for `entry`, or `nil` when the selection leaves it out.
    func record(for entry: JournalEntry) -> LogRecord? {
        let isCoredump = text(entry, "MESSAGE_ID") == Self.coredumpMessageID
        let unit = isCoredump ? (text(entry, "COREDUMP_UNIT") ?? text(entry, "_SYSTEMD_UNIT")) : text(entry, "_SYSTEMD_UNIT")
        if let unit, selection.excludedUnits.contains(unit) { return nil }
        if !selection.units.isEmpty && !(unit.map(selection.units.contains) ?? false) { return nil }
        // journald stores LOG_INFO for entries sent without a priority.
        let severity = text(entry, "PRIORITY").flatMap { Severity(text: $0) } ?? .informational
        if !isCoredump && severity > selection.leastImportant { return nil }

        var message = entry.fields["MESSAGE"] ?? []
        let truncated = message.count + "MESSAGE=".utf8.count >= maximumFieldBytes
        if truncated {
            message = Array(message[...].droppingIncompleteUTF8Suffix())
        }
        var record = LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: Int64(clamping: entry.realtime)),
            priority: isCoredump ? .crash : PriorityClass(severity: severity),
            severity: severity,
            host: text(entry, "_HOSTNAME") ?? hostname,
            source: .journal,
            message: String(decoding: message, as: UTF8.self),
            peer: peer(entry),
            truncated: truncated)
        for field in Self.standardFields + extraFields + (isCoredump ? Self.coredumpFields : []) {
            if let value = text(entry, field) { record.fields[Self.recordFieldName(field)] = value }
        }
        return record
    }

    /// `_SYSTEMD_UNIT` as `systemd_unit`, `COREDUMP_EXE` as `coredump_exe`: the socket inputs' style.
    static func recordFieldName(_ field: String) -> String {
        String(field.drop { $0 == "_" }).lowercased()
    }

    /// The sender as journald recorded it; none unless pid, uid and gid are all known.
    private func peer(_ entry: JournalEntry) -> PeerCredentials? {
        guard let pid = text(entry, "_PID").flatMap({ Int32($0) }),
            let uid = text(entry, "_UID").flatMap({ UInt32($0) }),
            let gid = text(entry, "_GID").flatMap({ UInt32($0) })
        else { return nil }
        return PeerCredentials(pid: pid, uid: uid, gid: gid, comm: text(entry, "_COMM"))
    }

    private func text(_ entry: JournalEntry, _ field: String) -> String? {
        entry.fields[field].map { String(decoding: $0, as: UTF8.self) }
    }
}
