import Foundation
import GRDB
import Synchronization

extension SpoolDatabase {
    /// After this many chunks read back for one claim, the claim ends its batch before the next chunk that is not
    /// in memory, so that appends trimming the cache meanwhile cannot keep it reading.
    private static let chunkReadsPerClaim = 8

    /// Claims from the ledger; reads a chunk's lines from the database (a reader, off the writer queue) when the
    /// claim reaches a chunk whose lines are not in memory.
    func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        try checkOpen()
        var reads = 0
        var missing: Set<Int64> = []
        while true {
            let step = ledger.withLock {
                $0.claim(priority, limits: limits, now: Date(), stoppingAtMissingLines: reads >= Self.chunkReadsPerClaim)
            }
            guard case .needsLines(let id) = step else {
                guard case .done(let result) = step else { preconditionFailure("unreachable") }
                if case .batch = result { prefetch(priority) }
                return result
            }
            reads += 1
            let lines: ChunkLines?
            do {
                lines = try await database.read { db in try Self.lines(ofChunk: id, db) }
            } catch let damage as ChunkDamage {
                try await quarantine(chunk: id, of: priority, damage)
                continue
            }
            guard let lines else {
                // Evicted meanwhile (its deletion may commit a moment before the ledger hears of it): the next
                // claim looks again without it. Missing twice while the ledger holds it: the row is gone, and the
                // quarantine (on the writer, after any eviction has told the ledger) takes it out of the ledger.
                if !missing.insert(id).inserted { try await quarantine(chunk: id, of: priority, .missing) }
                continue
            }
            guard ledger.withLock({ $0.attach(lines, toChunk: id, of: priority) }) else {
                let damage = ChunkDamage.linesDoNotMatch("its lines are not as many as the spool holds", lines: lines)
                try await quarantine(chunk: id, of: priority, damage)
                continue
            }
        }
    }

    /// Reads, in the background, the lines of the next chunk of `priority` the coming claims will need, so that a
    /// claim seldom waits for the database behind a long backlog.
    private func prefetch(_ priority: PriorityClass) {
        guard let id = ledger.withLock({ $0.chunkToPrefetch(priority) }),
            prefetching.withLock({ $0.insert(id).inserted })
        else { return }
        Task {
            defer { _ = prefetching.withLock { $0.remove(id) } }
            // A failed read is the claim's to meet and report, when it gets there.
            guard let lines = try? await database.read({ db in try Self.lines(ofChunk: id, db) }) else { return }
            ledger.withLock { _ = $0.attach(lines, toChunk: id, of: priority) }
        }
    }

    /// Deletes the records of delivered batches, all in one transaction.
    func acknowledge(_ batches: [Batch]) async throws {
        try await settlingWrite { db in
            let (writes, changes, _) = self.ledger.withLock { $0.settle(batches) }
            try self.commit(writes, reverting: changes, db)
            let emptied = self.ledger.withLock { ledger in
                ledger.lastAcknowledged = Date()
                return ledger.holdsNoRecords
            }
            if emptied { MallocTuning.releaseFreeMemory() }
        }
    }

    /// After acknowledgements could not be committed: their records are pending again, to be delivered again,
    /// and claims wait ``claimPauseAfterFailedAcknowledgement`` so that a failing disk is not met with the same
    /// batches over and over.
    func acknowledgementsFailed(_ batches: [Batch]) {
        ledger.withLock { ledger in
            for batch in batches { ledger.unclaim(batch, retryAt: nil) }
            ledger.claimsWaitUntil = Date().addingTimeInterval(Self.claimPauseAfterFailedAcknowledgement)
        }
    }

    /// Puts a claimed batch back at its place, ready at `retryAt`; nothing is written (a restart makes every
    /// record ready anyway).
    func release(_ batch: Batch, retryAt: Date) throws {
        try checkOpen()
        ledger.withLock { $0.unclaim(batch, retryAt: retryAt) }
    }

    /// Drops the claims on `batch`'s records; they are pending as stored.
    func returnToPending(_ batch: Batch) {
        ledger.withLock { $0.unclaim(batch, retryAt: nil) }
    }

    func deadLetter(_ batch: Batch, failure: DeliveryFailure) async throws {
        let failedAt = Timestamp.now().rfc3339
        let trimmed = try await settlingWrite { db -> (count: Int, lineBytes: Int) in
            let (writes, changes, settled) = self.ledger.withLock { $0.settle([batch]) }
            let lineBytes = settled.reduce(0) { $0 + $1.line.count }
            let excess = self.ledger.withLock {
                $0.deadLetterExcess(adding: lineBytes + settled.count * SpoolEntry.overhead, maximumBytes: self.maximumBytes)
            }
            var trimmed = (count: 0, lineBytes: 0)
            try self.commit(writes, reverting: changes, db) { db in
                try Self.insertDeadLetters(
                    settled, priority: batch.priority.rawValue, status: failure.status, reason: failure.reason,
                    failedAt: failedAt, db)
                // Beyond their share, the oldest give way.
                if excess > 0 { trimmed = try Self.deleteOldestDeadLetters(holding: excess, db) }
            }
            self.ledger.withLock { ledger in
                ledger.addDeadLetters(count: settled.count, lineBytes: lineBytes)
                ledger.removeDeadLetters(count: trimmed.count, lineBytes: trimmed.lineBytes)
                ledger.evicted += trimmed.count
            }
            return trimmed
        }
        logger.reportEvictedDeadLetters(trimmed.count)
    }

    func arrivalMark() throws -> ArrivalMark {
        try checkOpen()
        return ledger.withLock { $0.arrivalMark() }
    }

    func heldRecords(upTo mark: ArrivalMark, in classes: Set<PriorityClass>) throws -> Int {
        try checkOpen()
        return ledger.withLock { $0.heldRecords(upTo: mark, in: classes) }
    }

    func oldestTimestamps() async throws -> [PriorityClass: Timestamp] {
        try checkOpen()
        let oldest = ledger.withLock { ledger in
            ledger.oldestRecords().mapValues { ($0.chunkID, $0.line.map { Array($0.prefix(64)) }) }
        }
        var timestamps: [PriorityClass: Timestamp] = [:]
        for (priority, (chunkID, line)) in oldest {
            guard let line else {
                // Not in memory: the chunk is untouched, so its first record is the oldest.
                let prefix = try await database.read { db -> [UInt8] in
                    do {
                        let lines = try Self.lines(ofChunk: chunkID, db)
                        return lines.flatMap { $0.count > 0 ? Array($0.line(0).prefix(64)) : nil } ?? []
                    } catch is ChunkDamage {
                        return []  // the next claim of the class quarantines it
                    }
                }
                timestamps[priority] = SpoolEntry.timestamp(ofLine: prefix)
                continue
            }
            timestamps[priority] = SpoolEntry.timestamp(ofLine: line)
        }
        return timestamps
    }
}
