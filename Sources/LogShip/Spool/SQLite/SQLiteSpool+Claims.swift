import Foundation
import GRDB
import Synchronization

extension SQLiteSpool {
    /// After this many chunks read back for one claim, the claim ends its batch before the next chunk that is not
    /// in memory, so that appends trimming the cache meanwhile cannot keep it reading.
    private static let chunkReadsPerClaim = 8

    /// Claims from the ledger; reads a chunk's lines from the database (a reader, off the writer queue) when the
    /// claim reaches a chunk whose lines are not in memory.
    public func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        try checkOpen()
        var reads = 0
        var missing: Set<Int64> = []
        while true {
            let step = ledger.withLock {
                $0.claim(priority, limits: limits, stoppingAtMissingLines: reads >= Self.chunkReadsPerClaim)
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

    public func settle(_ batch: Batch, _ settlement: Settlement) async throws {
        switch settlement {
        case .delivered:
            try await acknowledgements.enqueue(batch)
        case .putBack:
            try checkOpen()
            ledger.withLock { $0.unclaim(batch) }
            // Unclaimed records may be evicted again, for what waits for room.
            commits.roomMayHaveChanged()
        case .deadLetter(let failure):
            try await deadLetter(batch, failure: failure)
        }
    }

    /// Settles `batch` as delivered and returns once the delete is committed (delivery does not wait:
    /// ``Settlement/delivered``).
    func acknowledge(_ batch: Batch) async throws {
        try await acknowledgements.append(batch)
    }

    /// Deletes the records of delivered batches, all in one transaction.
    func delete(_ batches: [Batch]) async throws {
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

    /// After acknowledgements could not be committed: their records are unclaimed, to be delivered again.
    func acknowledgementsFailed(_ batches: [Batch]) {
        ledger.withLock { ledger in
            for batch in batches { ledger.unclaim(batch) }
        }
    }

    public func oldestTimestamps() async throws -> [PriorityClass: Timestamp] {
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
