extension SpoolLedger {
    /// A dead letter as read for a requeue: the record's class and sequence, and its line.
    struct RequeuedLetter: Sendable {
        var priority: PriorityClass
        /// `nil` when the row's sequence is not a number.
        var sequence: Int64?
        var line: [UInt8]
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
            let change = plan.setMarks(.pending, of: index..<(index + 1), chunkAt: position, letter.priority, from: .settled)
            changes.append(change)
            touched[letter.priority, default: []].insert(change.chunkID)
        }
        var writes = plan.writes(settling: touched)
        writes.insertions = insertions
        return (writes, changes)
    }

    /// Marks pending the records a committed ``requeue(_:)`` put back. They are still settled: only settling
    /// writes change settled records, and those run one at a time.
    mutating func markRequeued(_ changes: [Change]) {
        for change in changes {
            guard let records = change.records, let position = position(of: change.chunkID, in: change.priority) else {
                continue
            }
            setMarks(.pending, of: records, chunkAt: position, change.priority, from: .settled)
        }
    }
}
