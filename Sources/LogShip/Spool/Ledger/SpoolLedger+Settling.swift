extension SpoolLedger {
    /// Settles the claimed records of `batches` (delivered or dead-lettered) at once, and says what the chunk rows
    /// must become: a chunk whose every record is settled is deleted, a partly settled one gets its settled runs.
    ///
    /// Records no longer claimed (returned to pending after a failed write) are left out.
    ///
    /// - Returns: The writes, the changes to ``revert(_:)`` should they fail to commit, and the records settled.
    mutating func settle(_ batches: [Batch]) -> (writes: ChunkWrites, changes: [Change], settled: [SpooledRecord]) {
        var changes: [Change] = []
        var settled: [SpooledRecord] = []
        var touched: [PriorityClass: Set<Int64>] = [:]
        for batch in batches {
            let claimed = locate(batch).filter {
                queues[batch.priority.rawValue].chunks[$0.chunk].mark($0.record) == .claimed
            }
            settled += claimed.map { batch.records[$0.item] }
            for (position, run) in Self.runs(claimed.lazy.map { ($0.chunk, $0.record) }) {
                let change = setMarks(.settled, of: run, chunkAt: position, batch.priority, from: .claimed)
                changes.append(change)
                touched[batch.priority, default: []].insert(change.chunkID)
            }
        }
        return (writes(settling: touched), changes, settled)
    }

    /// The row writes for chunks whose records were settled.
    func writes(settling touched: [PriorityClass: Set<Int64>]) -> ChunkWrites {
        var writes = ChunkWrites()
        for (priority, ids) in touched {
            for chunk in queues[priority.rawValue].chunks where ids.contains(chunk.id) {
                writes.recordSettlement(of: chunk, priority)
            }
        }
        return writes
    }
}
