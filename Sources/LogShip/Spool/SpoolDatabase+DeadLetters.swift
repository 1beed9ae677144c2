import Foundation
import GRDB
import Synchronization

extension SpoolDatabase {
    func deadLetters(limit: Int) async throws -> [DeadLetter] {
        try await database.read { db in
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

    /// Returns how many moved, and their classes.
    func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> (Int, Set<PriorityClass>) {
        let (moved, classes) = try await settlingWrite { db -> ([PriorityClass: (count: Int, bytes: Int)], Set<PriorityClass>) in
            var moved: [PriorityClass: (count: Int, bytes: Int)] = [:]
            try db.inTransaction {
                let filter = Self.filter(selection)
                let rows = try Row.fetchAll(
                    db, sql: "SELECT priority, count(*), total(length(line)) FROM dead_letter \(filter.sql) GROUP BY priority",
                    arguments: filter.arguments)
                for row in rows {
                    guard let priority = PriorityClass(rawValue: row[0]) else { continue }
                    let count: Int = row[1]
                    let bytes = Int(row[2] as Double)
                    moved[priority] = (count, bytes + count * SpoolEntry.overhead)
                }
                // Back at the original id: the record takes its old place in its class's order.
                try db.execute(
                    sql: """
                        INSERT INTO record (id, priority, line, size)
                        SELECT record_id, priority, line, length(line) FROM dead_letter \(filter.sql)
                        """,
                    arguments: filter.arguments)
                try db.execute(sql: "DELETE FROM dead_letter \(filter.sql)", arguments: filter.arguments)
                return .commit
            }
            self.state.withLock { state in
                for (priority, entry) in moved {
                    state.stored[priority.rawValue] += entry.count
                    state.bytes += entry.bytes
                    state.deadLetters -= entry.count
                }
            }
            return (moved, Set(moved.keys))
        }
        return (moved.values.reduce(0) { $0 + $1.count }, classes)
    }

    func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let purged = try await settlingWrite { db -> Int in
            let filter = Self.filter(selection)
            try db.execute(sql: "DELETE FROM dead_letter \(filter.sql)", arguments: filter.arguments)
            return db.changesCount
        }
        state.withLock { $0.deadLetters -= purged }
        return purged
    }

    private static func filter(_ selection: DeadLetterSelection) -> (sql: String, arguments: StatementArguments) {
        switch selection {
        case .all: ("", [])
        case .ids(let ids): ("WHERE id IN (\(placeholders(ids.count)))", StatementArguments(ids))
        }
    }
}
