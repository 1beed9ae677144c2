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
    /// An unclaimed record keeps its place: the next claim of its class starts with it.
    ///
    /// - Parameter stoppingAtMissingLines: End the batch before a chunk whose lines are not in memory instead of
    ///   asking for them, unless it would be empty: for a claim that has read lines several times already.
    mutating func claim(
        _ priority: PriorityClass, limits: BatchLimits, stoppingAtMissingLines: Bool = false
    ) -> ClaimStep {
        guard queues[priority.rawValue].pending > 0 else { return .done(.empty) }
        let picks: [(chunk: Int, record: Int)]
        switch choose(priority, limits: limits, stoppingAtMissingLines: stoppingAtMissingLines) {
        case .picked(let chosen): picks = chosen
        case .step(let step): return step
        }
        var records: [SpooledRecord] = []
        records.reserveCapacity(picks.count)
        // Read through the queue in place: a copy of a chunk held across `setMark` would copy its marks.
        for (position, run) in Self.runs(picks) {
            { chunk in
                for index in run {
                    records.append(
                        SpooledRecord(sequence: chunk.firstSequence + Int64(index), line: chunk.lines!.line(index)))
                }
            }(queues[priority.rawValue].chunks[position])
            setMarks(.claimed, of: run, chunkAt: position, priority, from: .pending)
        }
        claims += 1
        let batch = Batch(priority: priority, records: records, number: claims, instance: instance)
        return .done(.batch(batch, moreLeft: queues[priority.rawValue].pending > 0))
    }

    private enum Choice {
        case picked([(chunk: Int, record: Int)])
        case step(ClaimStep)
    }

    /// The records a claim would take, by chunk position and index; changes nothing.
    private func choose(_ priority: PriorityClass, limits: BatchLimits, stoppingAtMissingLines: Bool) -> Choice {
        var picks: [(chunk: Int, record: Int)] = []
        var bytes = 0
        let chunks = queues[priority.rawValue].chunks
        for position in chunks.indices where chunks[position].pendingCount > 0 {
            let chunk = chunks[position]
            for index in (chunk.marks?.firstPending ?? 0)..<chunk.count where chunk.mark(index) == .pending {
                guard let lines = chunk.lines else {
                    return stoppingAtMissingLines && !picks.isEmpty
                        ? .picked(picks) : .step(.needsLines(chunkID: chunk.id))
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

    /// Puts claimed records back at their place, ready at once. Records no longer claimed are left as they are.
    mutating func unclaim(_ batch: Batch) {
        let claimed = locate(batch).filter {
            queues[batch.priority.rawValue].chunks[$0.chunk].mark($0.record) == .claimed
        }
        for (position, run) in Self.runs(claimed.lazy.map { ($0.chunk, $0.record) }) {
            setMarks(.pending, of: run, chunkAt: position, batch.priority, from: .claimed)
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
