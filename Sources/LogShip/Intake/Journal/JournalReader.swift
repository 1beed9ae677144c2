/// Reads a journal and keeps its place: positions it at start-up (saved cursor, head or tail), reads entries in
/// batches, follows new ones, and finds its place again after rotation or vacuum.
///
/// - Important: Every method must run on the one thread that created the reader (the journal's own, see
///   ``Journal``). `@unchecked Sendable` lets ``JournalIngestServer`` hand it to that thread.
final class JournalReader: @unchecked Sendable {
    /// How ``position(savedCursor:)`` placed the reader.
    enum Placement: Equatable, Sendable {
        /// Right after the saved cursor's entry.
        case afterSavedCursor
        /// At `start`: there was no saved cursor.
        case start(JournalStartPosition)
        /// The saved cursor's entry is gone (vacuumed, another machine's journal, corrupt): at the first entry
        /// after its time, or at `start` when the cursor carries no time.
        case cursorLost(realtime: UInt64?)
    }

    /// What one read produced.
    struct Batch: Sendable {
        var entries: [JournalEntry]
        /// The cursor of the last entry read, shipped or filtered; `nil` when nothing was read.
        var cursor: String?
        /// The newest entry's time in the whole journal, to tell how far behind the reader is.
        var newestRealtime: UInt64?
    }

    private let journal: Journal
    private let mapper: JournalRecordMapper
    /// What is read of an entry that is not a coredump.
    private let ordinaryFields: Set<String>
    private let start: JournalStartPosition
    /// The last entry read; the place to find again after rotation or vacuum.
    private var lastCursor: String?

    /// Opens the journal with its matches and field limit.
    ///
    /// - Parameters:
    ///   - directory: Journal files to read instead of the local journal.
    ///   - matches: Raw `FIELD=value` matches (`journal.matches`).
    /// - Throws: ``JournalError``.
    init(directory: String?, matches: [String], start: JournalStartPosition, mapper: JournalRecordMapper) throws {
        journal = try Journal(directory: directory)
        self.mapper = mapper
        ordinaryFields = Set(mapper.fieldsToRead(isCoredump: false))
        self.start = start
        do {
            try journal.setDataThreshold(mapper.maximumFieldBytes)
            for match in matches { try journal.addMatch(match) }
        } catch {
            journal.close()
            throw error
        }
    }

    /// Places the reader after `savedCursor`, or at the start position when there is none.
    ///
    /// Seeking to a cursor lands on its entry, which was shipped already: the reader stands on it, so the next
    /// read begins with the entry after it.
    func position(savedCursor: String?) throws -> Placement {
        guard let savedCursor else {
            try seekToStart()
            return .start(start)
        }
        if (try? journal.seek(cursor: savedCursor)) != nil, try journal.next(), journal.isAt(cursor: savedCursor) {
            lastCursor = savedCursor
            return .afterSavedCursor
        }
        let realtime = JournalCursor.realtime(of: savedCursor)
        if let realtime {
            try journal.seek(realtime: JournalCursor.timeAfter(realtime))
        } else {
            try seekToStart()
        }
        lastCursor = nil
        return .cursorLost(realtime: realtime)
    }

    /// Reads up to `limit` entries; when none is waiting, waits up to `timeout` for new ones first.
    func read(limit: Int, waitingUpTo timeout: Duration) throws -> Batch {
        var entries = try readAvailable(limit: limit)
        if entries.isEmpty {
            if try journal.wait(timeout: timeout) == .invalidate {
                try findPlace()
            }
            entries = try readAvailable(limit: limit)
        }
        // The reader stands on the last entry it read.
        let cursor = entries.isEmpty ? nil : try journal.cursor()
        if let cursor { lastCursor = cursor }
        return Batch(entries: entries, cursor: cursor, newestRealtime: journal.newestRealtime())
    }

    /// Closes the journal; the reader is unusable after.
    func close() {
        journal.close()
    }

    private func readAvailable(limit: Int) throws -> [JournalEntry] {
        var entries: [JournalEntry] = []
        while entries.count < limit, try journal.next() {
            entries.append(try readEntry())
        }
        return entries
    }

    private func readEntry() throws -> JournalEntry {
        let messageID = try journal.value(of: "MESSAGE_ID")
        let fields: [String: [UInt8]]
        if messageID == Array(CrashEvidence.coredumpMessageID.utf8) {
            // Field by field: a pass over all of a coredump's fields would read its core. A look-alike from any
            // sender is read the same way (it may carry a core too); whether it is trusted is the mapper's to
            // decide from the fields read.
            var coredump: [String: [UInt8]] = [:]
            for name in mapper.fieldsToRead(isCoredump: true) {
                coredump[name] = try journal.value(of: name)
            }
            fields = coredump
        } else {
            fields = try journal.values(of: ordinaryFields)
        }
        return JournalEntry(realtime: try journal.realtime(), fields: fields)
    }

    /// After files were added, rotated or removed: stands on the last entry read again, or after its time if it
    /// was removed, so nothing is skipped or read twice.
    private func findPlace() throws {
        guard let lastCursor else { return }
        if (try? journal.seek(cursor: lastCursor)) != nil, try journal.next(), journal.isAt(cursor: lastCursor) {
            return
        }
        if let realtime = JournalCursor.realtime(of: lastCursor) {
            try journal.seek(realtime: JournalCursor.timeAfter(realtime))
        }
    }

    private func seekToStart() throws {
        switch start {
        case .head:
            try journal.seekHead()
        case .tail:
            try journal.seekTail()
            // Stand on the newest entry, so that the next read begins with what is written after it.
            _ = try journal.previous()
        }
    }
}
