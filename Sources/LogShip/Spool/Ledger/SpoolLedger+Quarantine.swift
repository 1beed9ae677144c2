extension SpoolLedger {
    /// A damaged chunk taken out of the spool: its readable records become dead letters, the rest is counted lost.
    struct Quarantine: Sendable {
        var chunkID: Int64
        /// The class as stored: a class this build does not know is kept as it is.
        var storedPriority: Int
        /// The readable records not settled yet, with their places in the class.
        var letters: [SpooledRecord]
        /// Records the chunk held, not settled, that could not be read; `nil` when its count cannot be believed.
        var unreadable: Int?
        /// What was wrong with it.
        var damage: String

        var reason: String { "spool chunk \(chunkID) was damaged: \(damage)" }

        /// Plans the quarantine of a chunk whose `count` records (`nil`: a count not to be believed) start at
        /// `firstSequence` (`nil`: sequences not to be believed), `settledCount` of them `settled`.
        ///
        /// A readable line with no believable place of its own (beyond the count, or in a chunk whose sequences
        /// are out of range) gets the class's next sequence: a requeue then puts it at the end of its class,
        /// where it overlaps no other record.
        init(
            chunkID: Int64, storedPriority: Int, count: Int?, firstSequence: Int64?, settled: (Int) -> Bool,
            settledCount: Int, damage: ChunkDamage, nextSequence: inout Int64
        ) {
            self.chunkID = chunkID
            self.storedPriority = storedPriority
            self.damage = damage.detail
            // Settled records need nothing more; lines beyond the count belong to no record, and are kept.
            func isHeld(_ index: Int) -> Bool { count.map { index >= $0 || !settled(index) } ?? true }
            var letters: [SpooledRecord] = []
            var readWithin = 0
            let readable = damage.readable ?? ChunkLines([SpoolEntry]())
            for index in 0..<readable.count where isHeld(index) {
                let line = readable.line(index)
                if let count, index < count {
                    readWithin += 1
                    if let firstSequence {
                        letters.append(SpooledRecord(sequence: firstSequence + Int64(index), line: line))
                        continue
                    }
                }
                letters.append(SpooledRecord(sequence: nextSequence, line: line))
                nextSequence += 1
            }
            self.letters = letters
            unreadable = count.map { $0 - settledCount - readWithin }
        }
    }

    /// Plans taking the chunk `id` of `priority` out for `damage`; `nil` when the ledger no longer holds it.
    /// Nothing changes here: ``applyQuarantine(_:)`` does once the writes have committed.
    func planQuarantine(ofChunk id: Int64, _ priority: PriorityClass, damage: ChunkDamage) -> Quarantine? {
        guard let position = position(of: id, in: priority) else { return nil }
        let chunk = queues[priority.rawValue].chunks[position]
        var nextSequence = queues[priority.rawValue].nextSequence
        return Quarantine(
            chunkID: id, storedPriority: priority.rawValue, count: chunk.count, firstSequence: chunk.firstSequence,
            settled: { chunk.mark($0) == .settled }, settledCount: chunk.settledCount, damage: damage,
            nextSequence: &nextSequence)
    }

    /// Takes a quarantined chunk out, once its row is deleted and its letters written, and counts it.
    mutating func applyQuarantine(_ quarantine: Quarantine) {
        if let priority = PriorityClass(rawValue: quarantine.storedPriority) {
            _ = takeOut(chunkID: quarantine.chunkID, of: priority)
            if let newest = quarantine.letters.map(\.sequence).max() {
                queues[priority.rawValue].nextSequence = max(queues[priority.rawValue].nextSequence, newest + 1)
            }
        }
        addDeadLetters(count: quarantine.letters.count, lineBytes: quarantine.letters.reduce(0) { $0 + $1.line.count })
        quarantinedChunks += 1
        quarantinedRecords += quarantine.letters.count + (quarantine.unreadable ?? 0)
        unreadableRecords += quarantine.unreadable ?? 0
    }
}
