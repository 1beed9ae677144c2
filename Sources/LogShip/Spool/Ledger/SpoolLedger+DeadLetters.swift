extension SpoolLedger {
    /// What dead-lettering a batch comes to: the settling writes, the changes to ``revert(_:)`` should they fail
    /// to commit, the records to keep as dead letters, and the accounted bytes of the oldest dead letters that
    /// must give way for them (0 when none must).
    struct DeadLettering: Sendable {
        var writes: ChunkWrites
        var changes: [Change]
        var letters: [SpooledRecord]
        var excess: Int
    }

    /// The part of `spool.max_bytes` dead letters may hold: a quarter. They count against the budget, so that a
    /// remote refusing records cannot fill the disk with them, but records never evict them (they are other
    /// users' records, kept for an operator); beyond their share, the oldest give way to new ones.
    static let deadLetterShare = 4

    /// Settles the claimed records of `batch` to make them dead letters, and says how many bytes of the oldest
    /// dead letters must go for them to stay within their share of `maximumBytes`.
    mutating func planDeadLetters(_ batch: Batch, maximumBytes: Int) -> DeadLettering {
        let (writes, changes, settled) = settle([batch])
        let added = settled.reduce(0) { $0 + $1.line.count } + settled.count * SpoolEntry.overhead
        let excess = max(0, deadLetterBytes + added - maximumBytes / Self.deadLetterShare)
        return DeadLettering(writes: writes, changes: changes, letters: settled, excess: excess)
    }

    /// Counts committed dead letters: `added` new ones, and the oldest ones `trimmed` for their room, which count
    /// as evicted.
    mutating func countDeadLetters(added: [SpooledRecord], trimmed: (count: Int, lineBytes: Int)) {
        addDeadLetters(count: added.count, lineBytes: added.reduce(0) { $0 + $1.line.count })
        removeDeadLetters(count: trimmed.count, lineBytes: trimmed.lineBytes)
        evicted += trimmed.count
    }

    /// Plans putting dead letters back at their place in their class: pending again in their chunk if it is
    /// still stored (other records of it wait), or in a chunk of their own otherwise.
    ///
    /// Nothing changes here: the plan is made on a copy, and ``markRequeued(_:)`` makes the records pending once
    /// the writes have committed. Marked pending before, a claim could take them while the commit might yet fail.
    ///
    /// - Returns: The writes, and the records to mark pending once they commit.
    func requeue(_ letters: [RequeuedLetter]) -> (writes: ChunkWrites, changes: [Change]) {
        // Copying costs the class's chunk array and the marks of the chunks touched; requeues are rare.
        var plan = self
        var changes: [Change] = []
        var touched: [PriorityClass: Set<Int64>] = [:]
        var insertions: [ChunkWrites.Insertion] = []
        var nextID = nextChunkID
        for letter in letters {
            func insert(at sequence: Int64) {
                insertions.append(ChunkWrites.Insertion(
                    id: nextID, priority: letter.priority, firstSequence: sequence,
                    lines: ChunkLines([SpoolEntry(priority: letter.priority, line: letter.line)]),
                    sender: SpoolEntry.sender(ofLine: letter.line)))
                nextID += 1
            }
            // A place no record can have (changed by hand): the letter goes to the end of its class.
            guard let sequence = letter.sequence, (0..<SpoolChunk.sequenceLimit).contains(sequence) else {
                insert(at: plan.queues[letter.priority.rawValue].nextSequence)
                plan.queues[letter.priority.rawValue].nextSequence += 1
                continue
            }
            guard let position = plan.queues[letter.priority.rawValue].chunkIndex(containing: sequence) else {
                insert(at: sequence)
                continue
            }
            let index = plan.queues[letter.priority.rawValue].chunks[position].index(of: sequence)
            guard plan.queues[letter.priority.rawValue].chunks[position].mark(index) == .settled else { continue }
            let change = plan.setMarks(
                .pending, of: index..<(index + 1), chunkAt: position, letter.priority, from: .settled)
            changes.append(change)
            touched[letter.priority, default: []].insert(change.chunkID)
        }
        var writes = plan.writes(settling: touched)
        writes.insertions = insertions
        return (writes, changes)
    }

    /// Marks pending the records a committed ``requeue(_:)`` put back, and counts its `letters` out of the dead
    /// letters. The records are still settled: only settling writes change settled records, and those run one
    /// at a time.
    mutating func markRequeued(_ changes: [Change], letters: [RequeuedLetter]) {
        removeDeadLetters(count: letters.count, lineBytes: letters.reduce(0) { $0 + $1.line.count })
        for change in changes {
            guard let records = change.records, let position = position(of: change.chunkID, in: change.priority) else {
                continue
            }
            setMarks(.pending, of: records, chunkAt: position, change.priority, from: .settled)
        }
    }
}
