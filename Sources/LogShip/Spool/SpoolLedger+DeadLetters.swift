extension SpoolLedger {
    /// A dead letter as read for a requeue: the record's class and sequence, and its line.
    struct RequeuedLetter: Sendable {
        var priority: PriorityClass
        var sequence: Int64
        var line: [UInt8]
    }

    /// Puts dead letters back at their place in their class: pending again in their chunk if it is still stored
    /// (other records of it wait), or in a chunk of their own otherwise.
    ///
    /// - Returns: The writes, and the changes to ``revert(_:)`` should they fail to commit.
    mutating func requeue(_ letters: [RequeuedLetter]) -> (writes: ChunkWrites, changes: [Change]) {
        var changes: [Change] = []
        var touched: [PriorityClass: Set<Int64>] = [:]
        var insertions: [ChunkWrites.Insertion] = []
        var nextID = nextChunkID
        for letter in letters {
            guard let position = queues[letter.priority.rawValue].chunkIndex(containing: letter.sequence) else {
                insertions.append(ChunkWrites.Insertion(
                    id: nextID, priority: letter.priority, firstSequence: letter.sequence,
                    lines: ChunkLines([SpoolEntry(priority: letter.priority, line: letter.line)])))
                nextID += 1
                continue
            }
            let index = queues[letter.priority.rawValue].chunks[position].index(of: letter.sequence)
            guard queues[letter.priority.rawValue].chunks[position].mark(index) == .settled else { continue }
            let change = setMarks(.pending, of: index..<(index + 1), chunkAt: position, letter.priority, from: .settled)
            changes.append(change)
            touched[letter.priority, default: []].insert(change.chunkID)
        }
        var writes = writes(settling: touched)
        writes.insertions = insertions
        return (writes, changes)
    }
}
