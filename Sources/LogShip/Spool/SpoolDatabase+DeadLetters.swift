import Foundation
import GRDB
import Synchronization

extension SpoolDatabase {
    func deadLetters(limit: Int) async throws -> [DeadLetter] {
        try checkOpen()
        return try await database.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT id, priority, line, status, reason, failed_at FROM dead_letter ORDER BY id LIMIT ?",
                arguments: [limit]
            ).map { row in
                DeadLetter(
                    id: row[0],
                    priority: PriorityClass(rawValue: row[1])?.description ?? "?",
                    line: try row.withUnsafeData(atIndex: 2) { String(decoding: $0 ?? Data(), as: UTF8.self) },
                    status: row[3], reason: row[4], failedAt: row[5])
            }
        }
    }

    /// Moves dead letters back to their place in their class. Returns how many moved, and their classes.
    func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> (Int, Set<PriorityClass>) {
        try await settlingWrite { db -> (Int, Set<PriorityClass>) in
            let filter = Self.filter(selection)
            var ids: [Int64] = []
            var letters: [SpoolLedger.RequeuedLetter] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT id, record_id, priority, line FROM dead_letter \(filter.sql) ORDER BY record_id",
                arguments: filter.arguments)
            {
                // A class this build does not know stays a dead letter.
                guard let priority = PriorityClass(rawValue: row[2]) else { continue }
                ids.append(row[0])
                letters.append(SpoolLedger.RequeuedLetter(
                    priority: priority, sequence: row[1],
                    line: try row.withUnsafeData(atIndex: 3) { $0.map { Array($0) } ?? [] }))
            }
            guard !letters.isEmpty else { return (0, []) }
            let (writes, changes) = self.ledger.withLock { $0.requeue(letters) }
            try self.commit(writes, reverting: [], db) { db in
                try Self.execute("DELETE FROM dead_letter WHERE id IN", ids: ids, db)
            }
            self.ledger.withLock {
                $0.markRequeued(changes)
                $0.deadLetters -= letters.count
            }
            return (letters.count, Set(letters.map(\.priority)))
        }
    }

    func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let purged = try await settlingWrite { db -> Int in
            let filter = Self.filter(selection)
            try db.execute(sql: "DELETE FROM dead_letter \(filter.sql)", arguments: filter.arguments)
            return db.changesCount
        }
        ledger.withLock { $0.deadLetters -= purged }
        return purged
    }

    private static func filter(_ selection: DeadLetterSelection) -> (sql: String, arguments: StatementArguments) {
        switch selection {
        case .all: ("", [])
        case .ids(let ids): ("WHERE id IN (\(placeholders(ids.count)))", StatementArguments(ids))
        }
    }
}
