/// Turns journal entries into records, and decides which entries to ship.
///
/// The `_`-prefixed fields are set by journald itself from the sender's credentials, which is why `_PID`, `_UID`,
/// `_GID` and `_COMM` may be trusted as the record's identity. Crash reports are the ones the host vouches for
/// (``CrashEvidence``): they are crash records whatever their `PRIORITY`, with `crash_reason` and what is known of
/// the victim; a coredump's also with the stack trace in the message and the `COREDUMP_*` fields, but never the
/// core. Any other entry is a record of its `PRIORITY`'s class, whatever its words claim.
package struct JournalRecordMapper: Sendable {
    /// Fields every record may carry, besides the identity and the message.
    static let standardFields = [
        "_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER", "_BOOT_ID", "MESSAGE_ID", "CODE_FILE", "CODE_LINE",
    ]

    /// What a trusted coredump's record adds.
    static let coredumpFields = [
        "COREDUMP_EXE", "COREDUMP_PID", "COREDUMP_COMM", "COREDUMP_SIGNAL_NAME", "COREDUMP_UNIT", "COREDUMP_CMDLINE",
    ]

    /// Fields read for the record itself.
    static let recordFields = ["MESSAGE", "PRIORITY", "_HOSTNAME", "_PID", "_UID", "_GID", "_COMM"]

    /// Which entries are shipped.
    package struct Selection: Sendable {
        /// Units to ship; empty ships every unit. A crash report counts as the unit that crashed.
        package var units: Set<String>
        /// Units never shipped (logshipd's own, so that it cannot feed itself).
        package var excludedUnits: Set<String>
        /// The least important severity shipped (`journal.min_priority`: 0 emerg … 7 debug). Crash reports always go.
        package var leastImportant: Severity

        package init(units: Set<String> = [], excludedUnits: Set<String> = [], leastImportant: Severity = .debug) {
            self.units = units
            self.excludedUnits = excludedUnits
            self.leastImportant = leastImportant
        }
    }

    package var selection: Selection
    /// Host name for entries without `_HOSTNAME`.
    package var hostname: String
    /// Extra fields to carry (`journal.fields`), journal names.
    package var extraFields: [String]
    /// The most bytes read of one field, name included (`journal.max_field_bytes`): a value that reaches it was cut.
    package var maximumFieldBytes: Int

    package init(selection: Selection, hostname: String, extraFields: [String], maximumFieldBytes: Int) {
        self.selection = selection
        self.hostname = hostname
        self.extraFields = extraFields
        self.maximumFieldBytes = maximumFieldBytes
    }

    /// Every field the reader should fetch for an entry, each once; `COREDUMP_*` only for entries with
    /// systemd-coredump's `MESSAGE_ID` (whether they are trusted is decided from what is read).
    package func fieldsToRead(isCoredump: Bool) -> [String] {
        var fields = Self.recordFields + Self.standardFields + CrashEvidence.journalFields + extraFields
        if isCoredump { fields += Self.coredumpFields + CrashEvidence.coredumpJournalFields }
        var seen = Set<String>()
        return fields.filter { seen.insert($0).inserted }
    }

    /// The record for `entry`, or `nil` when the selection leaves it out.
    package func record(for entry: JournalEntry) -> LogRecord? {
        let crash = CrashEvidence(entry)
        // A crash report counts as the unit that crashed; any other entry as the unit journald saw send it.
        let unit = crash?.unit ?? entry.text("_SYSTEMD_UNIT")
        if let unit, selection.excludedUnits.contains(unit) { return nil }
        if !selection.units.isEmpty && !(unit.map(selection.units.contains) ?? false) { return nil }
        // journald stores LOG_INFO for entries sent without a priority.
        let severity = entry.text("PRIORITY").flatMap { Severity(text: $0) } ?? .informational
        if crash == nil && severity > selection.leastImportant { return nil }

        var message = entry.fields["MESSAGE"] ?? []
        let truncated = message.count + "MESSAGE=".utf8.count >= maximumFieldBytes
        if truncated {
            message = Array(message[...].droppingIncompleteUTF8Suffix())
        }
        var record = LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: Int64(clamping: entry.realtime)),
            priority: crash == nil ? PriorityClass(severity: severity) : .crash,
            severity: severity,
            host: entry.text("_HOSTNAME") ?? hostname,
            source: .journal,
            message: String(decoding: message, as: UTF8.self),
            peer: peer(entry),
            truncated: truncated)
        for field in Self.standardFields + extraFields + (crash?.source == .coredump ? Self.coredumpFields : []) {
            guard let value = entry.text(field) else { continue }
            let name = Self.recordFieldName(field)
            // The crash_* fields are the host's word: a sender's field of that name (journal.fields) keeps its
            // value under another name.
            record.fields[RecordFields.senderName(name)] = value
        }
        for (name, value) in crash?.recordFields ?? [] {
            record.fields[name] = value
        }
        return record
    }

    /// `_SYSTEMD_UNIT` as `systemd_unit`, `COREDUMP_EXE` as `coredump_exe`: the socket inputs' style.
    static func recordFieldName(_ field: String) -> String {
        String(field.drop { $0 == "_" }).lowercased()
    }

    /// The sender as journald recorded it; none unless pid, uid and gid are all known.
    private func peer(_ entry: JournalEntry) -> PeerCredentials? {
        guard let pid = entry.text("_PID").flatMap({ Int32($0) }),
            let uid = entry.text("_UID").flatMap({ UInt32($0) }),
            let gid = entry.text("_GID").flatMap({ UInt32($0) })
        else { return nil }
        return PeerCredentials(pid: pid, uid: uid, gid: gid, comm: entry.text("_COMM"))
    }
}
