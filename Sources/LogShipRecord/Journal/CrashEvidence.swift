/// A crash report the host vouches for: which journal entries are one, and what they say about the victim.
///
/// A sender sets any field that does not start with `_`, so `MESSAGE_ID`, `COREDUMP_UNIT` or a message that reads
/// like the kernel's never make a crash on their own. What decides is what journald records of the sender
/// (`_TRANSPORT`, `_UID`, `_PID`, `_COMM`, `_EXE`, `_SYSTEMD_UNIT`), and then the words of a sender it names:
/// - systemd-coredump's entries (`MESSAGE_ID=fc2e22bc…`) sent by systemd-coredump (`_COMM=systemd-coredum`, the
///   kernel's 15 bytes, or `_EXE` ending in `/systemd-coredump`) as root, or from its own service,
///   `systemd-coredump@….service`: it takes the crashing user's uid (or its own system user's) before it logs,
///   so that the user may read the entry, and no user can run a process in that system unit;
/// - the kernel's own lines (`_TRANSPORT=kernel`) that ``KernelCrashReport`` recognises;
/// - PID 1's "Failed with result" entries (`_PID=1`, `_UID=0`, `UNIT=`, `UNIT_RESULT=`) for `core-dump`,
///   `signal` and `oom-kill`.
package struct CrashEvidence: Hashable, Sendable {
    /// Who vouches.
    package enum Source: Hashable, Sendable {
        case coredump
        case kernel
        case serviceManager
    }

    /// `MESSAGE_ID` of systemd-coredump's entries.
    package static let coredumpMessageID = "fc2e22bc6ee647b6b90729ab34a250b1"

    /// The unit results of PID 1 that mean the service's process crashed.
    static let crashResults: Set<String> = ["core-dump", "signal", "oom-kill"]

    /// Every field the decision reads; the reader must fetch them all.
    package static let journalFields = [
        "MESSAGE", "MESSAGE_ID", "_TRANSPORT", "_UID", "_PID", "_COMM", "_EXE", "_SYSTEMD_UNIT", "UNIT", "UNIT_RESULT",
    ]

    /// What a trusted coredump adds to the decision's fields.
    package static let coredumpJournalFields = ["COREDUMP_UNIT", "COREDUMP_PID", "COREDUMP_COMM"]

    /// The record fields that carry the evidence; only the mapper may set them.
    package static let recordFieldNames: Set<String> = ["crash_reason", "crash_pid", "crash_comm", "crash_unit"]

    package var source: Source
    /// `crash_reason`: `core-dump`, a ``KernelCrashReport/Reason``, or PID 1's unit result.
    package var reason: String
    package var pid: Int32?
    package var comm: String?
    /// The unit that crashed, which the unit selection sees the record as.
    package var unit: String?

    package init(source: Source, reason: String, pid: Int32? = nil, comm: String? = nil, unit: String? = nil) {
        self.source = source
        self.reason = reason
        self.pid = pid
        self.comm = comm
        self.unit = unit
    }

    /// The crash `entry` reports, when the host vouches for it; `nil` for every other entry.
    package init?(_ entry: JournalEntry) {
        if let coredump = Self.coredump(entry) {
            self = coredump
        } else if entry.text("_TRANSPORT") == "kernel",
            let report = KernelCrashReport(message: entry.fields["MESSAGE"]?[...] ?? [])
        {
            self.init(
                source: .kernel, reason: report.reason.rawValue, pid: report.pid, comm: report.comm, unit: report.unit)
        } else if let failure = Self.unitFailure(entry) {
            self = failure
        } else {
            return nil
        }
    }

    /// The record fields that say it: `crash_reason`, and `crash_pid`, `crash_comm`, `crash_unit` when known.
    package var recordFields: [(String, String)] {
        var fields = [("crash_reason", reason)]
        if let pid { fields.append(("crash_pid", String(pid))) }
        if let comm { fields.append(("crash_comm", comm)) }
        if let unit { fields.append(("crash_unit", unit)) }
        return fields
    }

    /// Whether journald saw systemd-coredump itself send `entry`.
    static func isFromSystemdCoredump(_ entry: JournalEntry) -> Bool {
        let isCoredumpProgram =
            entry.text("_COMM") == "systemd-coredum" || entry.text("_EXE")?.hasSuffix("/systemd-coredump") == true
        let unit = entry.text("_SYSTEMD_UNIT")
        let isCoredumpService = unit.map { $0.hasPrefix("systemd-coredump@") && $0.hasSuffix(".service") } ?? false
        return isCoredumpProgram && (entry.text("_UID").flatMap { UInt32($0) } == 0 || isCoredumpService)
    }

    private static func coredump(_ entry: JournalEntry) -> CrashEvidence? {
        guard entry.text("MESSAGE_ID") == coredumpMessageID, isFromSystemdCoredump(entry) else { return nil }
        return CrashEvidence(
            source: .coredump, reason: "core-dump", pid: entry.text("COREDUMP_PID").flatMap { Int32($0) },
            comm: entry.text("COREDUMP_COMM"), unit: entry.text("COREDUMP_UNIT"))
    }

    private static func unitFailure(_ entry: JournalEntry) -> CrashEvidence? {
        guard entry.text("_PID") == "1", entry.text("_UID").flatMap({ UInt32($0) }) == 0,
            let result = entry.text("UNIT_RESULT"), crashResults.contains(result),
            let unit = entry.text("UNIT"), !unit.isEmpty
        else { return nil }
        return CrashEvidence(source: .serviceManager, reason: result, unit: unit)
    }
}
