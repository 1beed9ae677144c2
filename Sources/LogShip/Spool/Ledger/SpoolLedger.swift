import Foundation

/// What a spool holds, known in memory: every chunk of every class, what delivery has done with each of their
/// records, and the counts. Every decision is made here under the spool's lock; the spool carries out the writes
/// it returns and tells it what was committed (``SQLiteSpool``), or applies them at once (``MemorySpool``).
///
/// - Claims, unclaims and their retry times live only here: a claim costs no disk access when the chunk's lines
///   are in memory, and after a restart every stored record is unclaimed and ready again.
/// - A write that removes records marks them settled at once (so no claim takes them while the transaction is
///   written) and returns the changes, which ``revert(_:)`` undoes should the transaction fail. Records a
///   transaction adds join the ledger only once committed (``apply(_:)``).
/// - Lines are kept in memory for the chunks delivery is working on, for the newest chunk of each class (which
///   the next records may extend) and for recent chunks up to ``cacheBudget``, larger while the remote takes
///   records than while it does not; the others are read back from the database when their turn comes.
struct SpoolLedger: Sendable {
    /// Marks as they were before a write changed them, to put back if the write fails.
    struct Change: Sendable {
        var priority: PriorityClass
        var chunkID: Int64
        /// The records, all of which had `mark`; `nil` for a whole chunk that had no marks.
        var records: Range<Int>?
        var mark: RecordMarks.Mark
    }

    var queues = [ClassQueue](repeating: ClassQueue(), count: PriorityClass.allCases.count)
    var nextChunkID: Int64 = 1
    /// Dead letters held, and their accounted bytes (lines plus ``SpoolEntry/overhead``), which count against
    /// `spool.max_bytes` (``deadLetterShare``): change both with ``addDeadLetters(count:lineBytes:)`` and
    /// ``removeDeadLetters(count:lineBytes:)``.
    private(set) var deadLetters = 0
    private(set) var deadLetterBytes = 0
    var evicted = 0
    var refused = 0
    /// Of those, what the disk was short for, and when it last was.
    var evictedForDisk = 0
    var refusedForDisk = 0
    var lastDiskShortage: Date?
    /// Damaged chunks taken out since the spool opened, the records they held not settled, and of those the
    /// ones that could not be read (the others became dead letters).
    var quarantinedChunks = 0
    var quarantinedRecords = 0
    var unreadableRecords = 0
    /// The damaged spool file set aside when this one was started in its place.
    var setAside: SpoolSetAside?
    /// Claims made since the spool opened, numbering batches in the order they took their records.
    var claims = 0
    var isClosed = false
    /// How long after the last acknowledgement delivery still counts as going on.
    static let deliveringWindow: TimeInterval = 5

    /// Bytes of lines held in memory.
    private(set) var cachedBytes = 0
    let cacheBudget: CacheBudget
    /// When an acknowledgement last committed.
    var lastAcknowledged: Date?

    /// The spool's life, which every record's id names (``RecordIDs``).
    let instance: SpoolInstance

    init(cacheBudget: CacheBudget, instance: SpoolInstance) {
        self.cacheBudget = cacheBudget
        self.instance = instance
    }

    // MARK: Counts

    /// Bytes held against the budget: records not settled, and dead letters.
    var bytes: Int { queues.reduce(0) { $0 + $1.bytes } + deadLetterBytes }

    /// Counts dead letters kept, with the bytes of their lines.
    mutating func addDeadLetters(count: Int, lineBytes: Int) {
        deadLetters += count
        deadLetterBytes += lineBytes + count * SpoolEntry.overhead
    }

    /// Counts dead letters gone (purged, requeued, or given way), with the bytes of their lines.
    mutating func removeDeadLetters(count: Int, lineBytes: Int) {
        deadLetters -= count
        deadLetterBytes -= lineBytes + count * SpoolEntry.overhead
    }

    /// A dead letter as read for a requeue: the record's class and sequence, and its line.
    struct RequeuedLetter: Sendable {
        var priority: PriorityClass
        /// `nil` when the row's sequence is not a number.
        var sequence: Int64?
        var line: [UInt8]
    }

    // MARK: Marks

    /// Changes the marks of a run of records, every one of them marked `previous`, keeping the class's counts in
    /// step; returns the change, to undo it.
    ///
    /// - Important: Sizes are read from the chunk's lines, which must be in memory unless the records go between
    ///   pending and claimed (sizes are not counted apart for those).
    @discardableResult
    mutating func setMarks(
        _ mark: RecordMarks.Mark, of records: Range<Int>, chunkAt position: Int, _ priority: PriorityClass,
        from previous: RecordMarks.Mark
    ) -> Change {
        let p = priority.rawValue
        let change = Change(
            priority: priority, chunkID: queues[p].chunks[position].id, records: records, mark: previous)
        guard previous != mark else { return change }
        let bytes = previous == .settled || mark == .settled
            ? { chunk in records.reduce(0) { $0 + chunk.accountedBytes(of: $1) } }(queues[p].chunks[position]) : 0
        let sender = queues[p].chunks[position].sender
        switch previous {
        case .pending: queues[p].pending -= records.count
        case .claimed: queues[p].claimed -= records.count
        case .settled: queues[p].changeBytes(by: bytes, of: sender)
        }
        switch mark {
        case .pending: queues[p].pending += records.count
        case .claimed: queues[p].claimed += records.count
        case .settled: queues[p].changeBytes(by: -bytes, of: sender)
        }
        queues[p].chunks[position].withMarks { $0.change(records, from: previous, to: mark) }
        return change
    }

    /// Records given as (chunk position, index) pairs in order, as runs of consecutive records of one chunk.
    static func runs(_ records: some Sequence<(chunk: Int, record: Int)>) -> [(chunk: Int, records: Range<Int>)] {
        var runs: [(chunk: Int, records: Range<Int>)] = []
        for (chunk, record) in records {
            if let last = runs.last, last.chunk == chunk, last.records.upperBound == record {
                runs[runs.count - 1].records = last.records.lowerBound..<(record + 1)
            } else {
                runs.append((chunk, record..<(record + 1)))
            }
        }
        return runs
    }

    /// Settles every record of a chunk no delivery has touched, without needing its lines (an eviction).
    mutating func settleWholeChunk(at position: Int, _ priority: PriorityClass) -> Change {
        let (id, count, bytes, sender) = { ($0.id, $0.count, $0.accountedBytes, $0.sender) }(
            queues[priority.rawValue].chunks[position])
        precondition(queues[priority.rawValue].chunks[position].isUntouched)
        queues[priority.rawValue].pending -= count
        queues[priority.rawValue].changeBytes(by: -bytes, of: sender)
        queues[priority.rawValue].chunks[position].withMarks { $0.change(0..<count, from: .pending, to: .settled) }
        return Change(priority: priority, chunkID: id, records: nil, mark: .pending)
    }

    /// Puts back what a failed write changed, newest change first (retry times of evicted records are not kept:
    /// they are ready at once).
    mutating func revert(_ changes: [Change]) {
        for change in changes.reversed() {
            guard let position = position(of: change.chunkID, in: change.priority) else { continue }
            guard let records = change.records else {
                let chunk = queues[change.priority.rawValue].chunks[position]
                queues[change.priority.rawValue].chunks[position].marks = nil
                queues[change.priority.rawValue].pending += chunk.count
                queues[change.priority.rawValue].changeBytes(by: chunk.accountedBytes, of: chunk.sender)
                continue
            }
            // The records are all marked as the change left them: the first one says how.
            let now = queues[change.priority.rawValue].chunks[position].mark(records.lowerBound)
            setMarks(change.mark, of: records, chunkAt: position, change.priority, from: now)
        }
    }

    /// The position of the chunk with `id` in its class's queue.
    func position(of id: Int64, in priority: PriorityClass) -> Int? {
        queues[priority.rawValue].index(ofChunk: id)
    }

    // MARK: Structure

    /// Adds a chunk read from the database at start-up, after those of its class already restored.
    mutating func restore(_ chunk: SpoolChunk, of priority: PriorityClass) {
        queues[priority.rawValue].chunks.append(chunk)
        queues[priority.rawValue].pending += chunk.pendingCount
        queues[priority.rawValue].changeBytes(by: chunk.heldBytes, of: chunk.sender)
        queues[priority.rawValue].nextSequence = max(queues[priority.rawValue].nextSequence, chunk.endSequence)
        cachedBytes += chunk.lines?.bytes.count ?? 0
        nextChunkID = max(nextChunkID, chunk.id + 1)
    }

    /// Removes the chunk with `id` whatever its records' marks, taking its records not settled out of the counts;
    /// returns it. For a damaged chunk, whose row is gone.
    mutating func takeOut(chunkID id: Int64, of priority: PriorityClass) -> SpoolChunk? {
        guard let chunk = queues[priority.rawValue].remove(chunkID: id) else { return nil }
        queues[priority.rawValue].pending -= chunk.pendingCount
        queues[priority.rawValue].claimed -= chunk.claimedCount
        queues[priority.rawValue].changeBytes(by: -chunk.heldBytes, of: chunk.sender)
        cachedBytes -= chunk.lines?.bytes.count ?? 0
        return chunk
    }

    /// Makes committed writes part of the ledger: new and extended chunks, deleted ones gone; then trims the
    /// lines kept to the budget in force at `now`.
    mutating func apply(_ writes: ChunkWrites, now: Date = Date()) {
        for insertion in writes.insertions {
            let priority = insertion.priority.rawValue
            let chunk = SpoolChunk(
                id: insertion.id, firstSequence: insertion.firstSequence, count: insertion.lines.count,
                blobBytes: insertion.lines.bytes.count, lines: insertion.lines, sender: insertion.sender)
            let position = queues[priority].insertionIndex(for: chunk.firstSequence)
            if position == queues[priority].chunks.endIndex {
                queues[priority].chunks.append(chunk)
            } else {
                queues[priority].chunks.insert(chunk, at: position)
            }
            queues[priority].pending += chunk.count
            queues[priority].changeBytes(by: chunk.accountedBytes, of: chunk.sender)
            queues[priority].nextSequence = max(queues[priority].nextSequence, chunk.endSequence)
            cachedBytes += chunk.blobBytes
            nextChunkID = max(nextChunkID, insertion.id + 1)
        }
        for extended in writes.extensions {
            let priority = extended.priority.rawValue
            guard let position = position(of: extended.id, in: extended.priority) else { continue }
            cachedBytes += extended.lines.bytes.count - (queues[priority].chunks[position].lines?.bytes.count ?? 0)
            queues[priority].chunks[position].extend(to: extended.lines)
            queues[priority].pending += extended.added
            queues[priority].changeBytes(by: extended.addedBytes, of: queues[priority].chunks[position].sender)
            queues[priority].nextSequence = max(
                queues[priority].nextSequence, queues[priority].chunks[position].endSequence)
        }
        for (id, priority, _) in writes.deletions {
            guard let removed = queues[priority.rawValue].remove(chunkID: id) else { continue }
            cachedBytes -= removed.lines?.bytes.count ?? 0
        }
        trimCache(now: now)
    }

    // MARK: Lines in memory

    /// Keeps lines read back from the database for the chunk with `id`, unless its lines are already here.
    ///
    /// - Returns: False when the lines do not match the chunk (a damaged row); they are not kept then.
    @discardableResult
    mutating func attach(_ lines: ChunkLines, toChunk id: Int64, of priority: PriorityClass) -> Bool {
        guard let position = position(of: id, in: priority) else { return true }
        guard queues[priority.rawValue].chunks[position].lines == nil else { return true }
        guard lines.count == queues[priority.rawValue].chunks[position].count else { return false }
        queues[priority.rawValue].chunks[position].lines = lines
        cachedBytes += lines.bytes.count
        return true
    }

    /// Chunks no delivery has touched yet, at the head of each class, whose lines are kept: the next claims read
    /// them.
    static let keptHeadChunks = 2

    /// Drops lines of chunks delivery is not working on while more than the budget is held, newest first,
    /// sparing each class's newest chunk (the next records may extend it) and the first untouched chunks at its
    /// head (the next claims take them).
    private mutating func trimCache(now: Date) {
        let delivering = lastAcknowledged.map { now.timeIntervalSince($0) < Self.deliveringWindow } ?? false
        let budget = delivering ? cacheBudget.delivering : cacheBudget.stalled
        guard cachedBytes > budget else { return }
        for priority in PriorityClass.allCases {
            // Positions only: a copy of the queue held while a chunk changes would copy the whole queue.
            let head = { chunks in
                chunks.firstIndex(where: \.isUntouched).map { $0 + Self.keptHeadChunks } ?? chunks.endIndex
            }(
                queues[priority.rawValue].chunks)
            var position = queues[priority.rawValue].chunks.endIndex - 1
            while position > head, cachedBytes > budget {
                position -= 1
                guard queues[priority.rawValue].chunks[position].isUntouched,
                    let lines = queues[priority.rawValue].chunks[position].lines
                else { continue }
                queues[priority.rawValue].chunks[position].lines = nil
                cachedBytes -= lines.bytes.count
            }
            if cachedBytes <= budget { return }
        }
    }

    /// The first chunk of `priority` with pending records whose lines are not in memory, within the first
    /// ``keptHeadChunks`` untouched chunks: what the next claims will need read.
    func chunkToPrefetch(_ priority: PriorityClass) -> Int64? {
        var untouched = 0
        for chunk in queues[priority.rawValue].chunks where chunk.pendingCount > 0 {
            if chunk.lines == nil { return chunk.id }
            if chunk.isUntouched {
                untouched += 1
                if untouched == Self.keptHeadChunks { return nil }
            }
        }
        return nil
    }
}
