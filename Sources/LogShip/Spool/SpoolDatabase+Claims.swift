import Foundation
import GRDB
import Synchronization

extension SpoolDatabase {
    func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        try checkOpen()
        let now = Date()
        if let until = state.withLock({ $0.claimsWaitUntil }), until > now {
            return .waiting(until: until)
        }
        return try await database.writeWithoutTransaction { db in
            let claimed = self.state.withLock { $0.claimed }
            let rows = try Row.fetchCursor(
                db, sql: "SELECT id, not_before, size, line FROM record WHERE priority = ? ORDER BY id",
                arguments: [priority.rawValue])
            var records: [SpooledRecord] = []
            var sizes: [Int] = []
            var bytes = 0
            var moreLeft = false
            while let row = try rows.next() {
                let id: Int64 = row[0]
                guard claimed[id] == nil else { continue }
                let notBefore = (row[1] as Double?).map { Date(timeIntervalSince1970: $0) }
                let ready = notBefore.map { $0 <= now } ?? true
                if records.isEmpty, let notBefore, !ready { return .waiting(until: notBefore) }
                let size: Int = row[2]
                if !ready || records.count == limits.maxRecords || (!records.isEmpty && bytes + size + 1 > limits.maxBytes) {
                    moreLeft = true
                    break
                }
                records.append(SpooledRecord(sequence: id, line: try row.withUnsafeData(atIndex: 3) { $0.map { Array($0) } ?? [] }))
                sizes.append(size)
                bytes += size + 1
            }
            guard !records.isEmpty else { return .empty }
            let number = self.state.withLock { state in
                for (record, size) in zip(records, sizes) {
                    state.claimed[record.sequence] = (priority, size + SpoolEntry.overhead)
                }
                state.claims += 1
                return state.claims
            }
            return .batch(Batch(priority: priority, records: records, number: number), moreLeft: moreLeft)
        }
    }

    /// Deletes the records of delivered batches, all in one transaction.
    func acknowledge(_ batches: [Batch]) async throws {
        try await settle(batches.flatMap(\.sequences)) { db, ids in
            try Self.execute("DELETE FROM record WHERE id IN", ids: ids, db)
        }
    }

    /// After acknowledgements could not be committed: their records are pending again, to be delivered again,
    /// and claims wait ``claimPauseAfterFailedAcknowledgement`` so that a failing disk is not met with the same
    /// batches over and over.
    func acknowledgementsFailed(_ batches: [Batch]) {
        state.withLock { state in
            for id in batches.lazy.flatMap(\.sequences) { state.claimed[id] = nil }
            state.claimsWaitUntil = Date().addingTimeInterval(Self.claimPauseAfterFailedAcknowledgement)
        }
    }

    func release(_ batch: Batch, retryAt: Date) async throws {
        try await settlingWrite { db in
            try db.inTransaction {
                for chunk in batch.sequences.chunked(500) {
                    try db.execute(
                        sql: "UPDATE record SET not_before = ? WHERE id IN (\(Self.placeholders(chunk.count)))",
                        arguments: [retryAt.timeIntervalSince1970] + StatementArguments(chunk))
                }
                return .commit
            }
            self.state.withLock { state in
                for id in batch.sequences { state.claimed[id] = nil }
            }
        }
    }

    func deadLetter(_ batch: Batch, failure: DeliveryFailure) async throws {
        let failedAt = Timestamp.now().rfc3339
        try await settle(batch.sequences) { db, ids in
            for chunk in ids.chunked(500) {
                try db.execute(
                    sql: """
                        INSERT INTO dead_letter (record_id, priority, line, status, reason, failed_at)
                        SELECT id, priority, line, ?, ?, ? FROM record WHERE id IN (\(Self.placeholders(chunk.count)))
                        """,
                    arguments: StatementArguments([failure.status, failure.reason, failedAt] as [(any DatabaseValueConvertible)?])
                        + StatementArguments(chunk))
            }
            try Self.execute("DELETE FROM record WHERE id IN", ids: ids, db)
        }
        state.withLock { $0.deadLetters += batch.records.count }
    }

    /// Removes claimed records from the record table with `body` and from the counts.
    private func settle(_ ids: [Int64], _ body: @escaping @Sendable (Database, [Int64]) throws -> Void) async throws {
        try await settlingWrite { db in
            try db.inTransaction {
                try body(db, ids)
                return .commit
            }
            self.state.withLock { state in
                for id in ids {
                    guard let claimed = state.claimed.removeValue(forKey: id) else { continue }
                    state.stored[claimed.priority.rawValue] -= 1
                    state.bytes -= claimed.bytes
                }
            }
        }
    }

    /// Drops the claims on `batch`'s records; their rows are untouched, so they are pending as stored.
    func returnToPending(_ batch: Batch) {
        state.withLock { state in
            for id in batch.sequences { state.claimed[id] = nil }
        }
    }

    func pendingClasses() -> Set<PriorityClass> {
        state.withLock { state in
            let unclaimed = Self.unclaimed(state)
            return Set(PriorityClass.allCases.filter { unclaimed[$0.rawValue] > 0 })
        }
    }

    /// Unclaimed records per class (indexed by raw value).
    static func unclaimed(_ state: State) -> [Int] {
        var unclaimed = state.stored
        for claimed in state.claimed.values { unclaimed[claimed.priority.rawValue] -= 1 }
        return unclaimed
    }

    /// The id `AUTOINCREMENT` gave last: the newest record ever committed.
    func newestSequence() async throws -> Int64 {
        try checkOpen()
        return try await database.read { db in
            try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'record'") ?? 0
        }
    }

    func heldRecords(upTo sequence: Int64, in classes: Set<PriorityClass>) async throws -> Int {
        try checkOpen()
        guard !classes.isEmpty else { return 0 }
        let priorities = classes.map(\.rawValue)
        return try await database.read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT count(*) FROM record WHERE id <= ? AND priority IN (\(Self.placeholders(priorities.count)))",
                arguments: StatementArguments([sequence] as [Int64]) + StatementArguments(priorities)) ?? 0
        }
    }

    func oldestTimestamps() async throws -> [PriorityClass: Timestamp] {
        try checkOpen()
        return try await database.read { db in
            var oldest: [PriorityClass: Timestamp] = [:]
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT priority, substr(line, 1, 64) FROM record
                    WHERE id IN (SELECT min(id) FROM record GROUP BY priority)
                    """)
            for row in rows {
                guard let priority = PriorityClass(rawValue: row[0]) else { continue }
                let prefix = try row.withUnsafeData(atIndex: 1) { $0.map { Array($0) } ?? [] }
                oldest[priority] = SpoolEntry.timestamp(ofLine: prefix)
            }
            return oldest
        }
    }
}
