import Foundation

extension SpoolLedger {
    /// What a claim came to: an answer, or the lines of a chunk it must read first.
    enum ClaimStep: Sendable {
        case done(ClaimResult)
        /// The claim reaches a chunk whose lines are not in memory: read them, ``attach(_:toChunk:of:)``, and claim
        /// again. Nothing was claimed.
        case needsLines(chunkID: Int64)
    }

    /// Claims the oldest ready records of `priority`, up to `limits`, in arrival order.
    ///
    /// A released record keeps its place: while the oldest pending record waits for its retry time, nothing of
    /// its class is claimed, and a batch stops before a record that is not ready yet.
    ///
    /// - Parameter stoppingAtMissingLines: End the batch before a chunk whose lines are not in memory instead of
    ///   asking for them, unless it would be empty: for a claim that has read lines several times already.
    mutating func claim(
        _ priority: PriorityClass, limits: BatchLimits, now: Date, stoppingAtMissingLines: Bool = false
    ) -> ClaimStep {
        if let until = claimsWaitUntil, until > now { return .done(.waiting(until: until)) }
        guard queues[priority.rawValue].pending > 0 else { return .done(.empty) }
        let picks: [(chunk: Int, record: Int)]
        switch choose(priority, limits: limits, now: now, stoppingAtMissingLines: stoppingAtMissingLines) {
        case .picked(let chosen): picks = chosen
        case .step(let step): return step
        }
        var records: [SpooledRecord] = []
        records.reserveCapacity(picks.count)
        // Read through the queue in place: a copy of a chunk held across `setMark` would copy its marks.
        for (position, index) in picks {
            let sequence = queues[priority.rawValue].chunks[position].firstSequence + Int64(index)
            let line = Array(queues[priority.rawValue].chunks[position].lines!.line(index))
            records.append(SpooledRecord(sequence: sequence, line: line))
            setMark(.claimed, of: index, chunkAt: position, priority)
        }
        claims += 1
        let batch = Batch(priority: priority, records: records, number: claims)
        return .done(.batch(batch, moreLeft: queues[priority.rawValue].pending > 0))
    }

    private enum Choice {
        case picked([(chunk: Int, record: Int)])
        case step(ClaimStep)
    }

    /// The records a claim would take, by chunk position and index; changes nothing.
    private func choose(_ priority: PriorityClass, limits: BatchLimits, now: Date, stoppingAtMissingLines: Bool) -> Choice {
        var picks: [(chunk: Int, record: Int)] = []
        var bytes = 0
        let chunks = queues[priority.rawValue].chunks
        for position in chunks.indices where chunks[position].pendingCount > 0 {
            let chunk = chunks[position]
            for index in (chunk.marks?.firstPending ?? 0)..<chunk.count where chunk.mark(index) == .pending {
                if let retry = chunk.marks?.retryTime(index), retry > now {
                    return picks.isEmpty ? .step(.done(.waiting(until: retry))) : .picked(picks)
                }
                guard let lines = chunk.lines else {
                    return stoppingAtMissingLines && !picks.isEmpty ? .picked(picks) : .step(.needsLines(chunkID: chunk.id))
                }
                let size = lines.lineLength(index) + 1
                if picks.count == limits.maxRecords || (!picks.isEmpty && bytes + size > limits.maxBytes) {
                    return .picked(picks)
                }
                picks.append((position, index))
                bytes += size
            }
        }
        return .picked(picks)
    }

    /// Puts claimed records back at their place, ready at `retryAt` (`nil`: at once). Records no longer claimed
    /// are left as they are.
    mutating func unclaim(_ batch: Batch, retryAt: Date?) {
        for (position, index, _) in locate(batch) where queues[batch.priority.rawValue].chunks[position].mark(index) == .claimed {
            setMark(.pending, of: index, chunkAt: position, batch.priority, retryAt: retryAt)
        }
    }

    /// The chunk position and index of every record of `batch` the ledger still holds, with the record's place in
    /// the batch.
    func locate(_ batch: Batch) -> [(chunk: Int, record: Int, item: Int)] {
        let queue = queues[batch.priority.rawValue]
        var located: [(chunk: Int, record: Int, item: Int)] = []
        located.reserveCapacity(batch.records.count)
        var position: Int?
        for (item, record) in batch.records.enumerated() {
            if position == nil || !queue.chunks[position!].contains(record.sequence) {
                position = queue.chunkIndex(containing: record.sequence)
            }
            guard let position else { continue }
            located.append((position, queue.chunks[position].index(of: record.sequence), item))
        }
        return located
    }
}
