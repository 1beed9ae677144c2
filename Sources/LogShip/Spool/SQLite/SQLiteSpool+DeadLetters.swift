import Foundation
import GRDB
import Synchronization

extension SQLiteSpool {
    /// Inserts `records` of the class stored as `priority` into the dead-letter table, in the transaction under way.
    static func insertDeadLetters(
        _ records: [SpooledRecord], priority: Int, status: Int?, reason: String, failedAt: String, _ db: Database
    ) throws {
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO dead_letter (record_id, priority, line, status, reason, failed_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """)
        for record in records {
            try insert.execute(arguments: [record.sequence, priority, Data(record.line), status, reason, failedAt])
        }
    }

    /// Moves `batch`'s claimed records to the dead-letter table; beyond their share of the budget, the oldest
    /// dead letters give way.
    func deadLetter(_ batch: Batch, failure: DeliveryFailure) async throws {
        let failedAt = Timestamp.now().rfc3339
        let trimmed = try await settlingWrite { db -> (count: Int, lineBytes: Int) in
            let plan = self.ledger.withLock { $0.planDeadLetters(batch, maximumBytes: self.maximumBytes) }
            var trimmed = (count: 0, lineBytes: 0)
            try self.commit(plan.writes, reverting: plan.changes, db) { db in
                try Self.insertDeadLetters(
                    plan.letters, priority: batch.priority.rawValue, status: failure.status, reason: failure.reason,
                    failedAt: failedAt, db)
                if plan.excess > 0 { trimmed = try Self.deleteOldestDeadLetters(holding: plan.excess, db) }
            }
            self.ledger.withLock { $0.countDeadLetters(added: plan.letters, trimmed: trimmed) }
            return trimmed
        }
        logger.reportEvictedDeadLetters(trimmed.count)
    }

    public func deadLetters(limit: Int) async throws -> [DeadLetter] {
        try checkOpen()
        return try await database.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT id, priority, line, status, reason, failed_at FROM dead_letter ORDER BY id LIMIT ?",
                arguments: [limit]
            ).map { row in
                // Read leniently: a row changed by hand is listed as it is, not a trap.
                DeadLetter(
                    id: row.integer(atIndex: 0) ?? 0,
                    priority: row.integer(atIndex: 1).flatMap { PriorityClass(rawValue: Int($0)) }?.description ?? "?",
                    line: String(decoding: row.bytes(atIndex: 2) ?? Data(), as: UTF8.self),
                    status: row.integer(atIndex: 3).map { Int($0) }, reason: row.text(atIndex: 4) ?? "",
                    failedAt: row.text(atIndex: 5) ?? "")
            }
        }
    }

    public func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let classes = try await settlingWrite { db -> [PriorityClass] in
            try Self.requireKnown(selection, db)
            let filter = Self.filter(selection)
            var ids: [Int64] = []
            var letters: [SpoolLedger.RequeuedLetter] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT id, record_id, priority, line FROM dead_letter \(filter.sql) ORDER BY record_id",
                arguments: filter.arguments)
            {
                // A class this build does not know stays a dead letter.
                guard let id = row.integer(atIndex: 0),
                    let priority = row.integer(atIndex: 2).flatMap({ PriorityClass(rawValue: Int($0)) })
                else { continue }
                ids.append(id)
                letters.append(SpoolLedger.RequeuedLetter(
                    priority: priority, sequence: row.integer(atIndex: 1),
                    line: Array(row.bytes(atIndex: 3) ?? Data())))
            }
            guard !letters.isEmpty else { return [] }
            let (writes, changes) = self.ledger.withLock { $0.requeue(letters) }
            try self.commit(writes, reverting: [], db) { db in
                try Self.execute("DELETE FROM dead_letter WHERE id IN", ids: ids, db)
            }
            self.ledger.withLock { $0.markRequeued(changes, letters: letters) }
            return letters.map(\.priority)
        }
        if !classes.isEmpty { availability.announce(Set(classes)) }
        return classes.count
    }

    public func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let (purged, lineBytes) = try await settlingWrite { db -> (Int, Int) in
            try Self.requireKnown(selection, db)
            let filter = Self.filter(selection)
            let lineBytes = try Int.fetchOne(
                db, sql: "SELECT coalesce(sum(length(CAST(line AS BLOB))), 0) FROM dead_letter \(filter.sql)",
                arguments: filter.arguments
            ) ?? 0
            try db.execute(sql: "DELETE FROM dead_letter \(filter.sql)", arguments: filter.arguments)
            return (db.changesCount, lineBytes)
        }
        ledger.withLock { $0.removeDeadLetters(count: purged, lineBytes: lineBytes) }
        return purged
    }

    /// Throws ``UnknownDeadLetters`` when some of the selected ids name no dead letter. Runs inside the caller's
    /// write, so that nothing can come between the check and what it guards.
    private static func requireKnown(_ selection: DeadLetterSelection, _ db: Database) throws {
        guard case .ids(let ids) = selection, !ids.isEmpty else { return }
        // In chunks, as every IN list here, to stay under SQLite's limit of variables per statement.
        var existing: Set<Int64> = []
        for chunk in ids.chunked(500) {
            existing.formUnion(try Int64.fetchAll(
                db, sql: "SELECT id FROM dead_letter WHERE id IN (\(placeholders(chunk.count)))",
                arguments: StatementArguments(chunk)))
        }
        let unknown = ids.filter { !existing.contains($0) }
        if !unknown.isEmpty { throw UnknownDeadLetters(ids: unknown) }
    }

    /// Deletes the oldest dead letters until they held `bytes` of accounted bytes, or none is left; returns how
    /// many, and the bytes of their lines. Runs inside the caller's transaction.
    static func deleteOldestDeadLetters(holding bytes: Int, _ db: Database) throws -> (count: Int, lineBytes: Int) {
        var ids: [Int64] = []
        var lineBytes = 0
        let rows = try Row.fetchCursor(db, sql: "SELECT id, length(CAST(line AS BLOB)) FROM dead_letter ORDER BY id")
        while lineBytes + ids.count * SpoolEntry.overhead < bytes, let row = try rows.next() {
            guard let id = row.integer(atIndex: 0) else { continue }
            ids.append(id)
            lineBytes += row.integer(atIndex: 1).map(Int.init) ?? 0
        }
        try execute("DELETE FROM dead_letter WHERE id IN", ids: ids, db)
        return (ids.count, lineBytes)
    }

    private static func filter(_ selection: DeadLetterSelection) -> (sql: String, arguments: StatementArguments) {
        switch selection {
        case .all: ("", [])
        case .ids(let ids): ("WHERE id IN (\(placeholders(ids.count)))", StatementArguments(ids))
        }
    }
}
