import Foundation
import GRDB

extension SQLiteSpool {
    /// The lines of the chunk with `id`, decompressed, or `nil` if it is no longer stored.
    ///
    /// - Throws: ``ChunkDamage`` when its row cannot be read as what it says (a blob that does not decompress to
    ///   the size recorded beside it, lines not as many as its count, a form this build does not know), with what
    ///   could be read of it; `DatabaseError` when the database fails.
    static func lines(ofChunk id: Int64, _ db: Database) throws -> ChunkLines? {
        let row: Row?
        do {
            row = try Row.fetchOne(
                db, sql: "SELECT compression, size, count, lines FROM chunk WHERE id = ?", arguments: [id])
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT {
            throw ChunkDamage.implausibleRow("its row cannot be read: \(error.message ?? "malformed")")
        }
        guard let row else { return nil }
        guard let compression = row.integer(atIndex: 0).flatMap({ ChunkCompression(rawValue: Int($0)) }) else {
            throw ChunkDamage.unknownForm(row.text(atIndex: 0) ?? "NULL")
        }
        let blob = row.bytes(atIndex: 3) ?? Data()
        return try blob.withUnsafeBytes { blob in
            do {
                guard let size = row.integer(atIndex: 1), let count = row.integer(atIndex: 2) else {
                    throw ChunkDamage.implausibleRow("its size or count is not a number")
                }
                let lines = ChunkLines(blob: try compression.lines(fromBlob: blob, size: Int(size)))
                guard lines.count == count else {
                    throw ChunkDamage.linesDoNotMatch(
                        "its count is \(count) but its lines are \(lines.count)", lines: lines)
                }
                guard compression != .none || blob.count == size else {
                    throw ChunkDamage.linesDoNotMatch(
                        "its size is \(size) but its lines take \(blob.count) bytes", lines: lines)
                }
                return lines
            } catch var damage as ChunkDamage {
                if damage.readable == nil { damage.readable = compression.readableLines(fromBlob: blob) }
                throw damage
            }
        }
    }

    // MARK: SQL helpers

    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ",")
    }

    /// Runs `prefix (?, ?, …)` over `ids` in chunks that stay under SQLite's variable limit.
    static func execute(_ prefix: String, ids: [Int64], _ db: Database) throws {
        for chunk in ids.chunked(500) {
            try db.execute(sql: "\(prefix) (\(placeholders(chunk.count)))", arguments: StatementArguments(chunk))
        }
    }

    /// Writes what the ledger decided to the chunk tables.
    static func execute(_ writes: ChunkWrites, _ db: Database) throws {
        if !writes.deletions.isEmpty {
            let ids = writes.deletions.map(\.id)
            try execute("DELETE FROM chunk WHERE id IN", ids: ids, db)
            try execute("DELETE FROM chunk_settled WHERE chunk_id IN", ids: ids, db)
        }
        if !writes.settledRuns.isEmpty {
            let clear = try db.cachedStatement(sql: "DELETE FROM chunk_settled WHERE chunk_id = ?")
            let insert = try db.cachedStatement(
                sql: "INSERT INTO chunk_settled (chunk_id, first_index, count) VALUES (?, ?, ?)")
            for (id, runs) in writes.settledRuns {
                try clear.execute(arguments: [id])
                for run in runs {
                    try insert.execute(arguments: [id, run.lowerBound, run.count])
                }
            }
        }
        if !writes.insertions.isEmpty {
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO chunk (id, priority, first_sequence, count, compression, size, sender, lines)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            for insertion in writes.insertions {
                let stored = ChunkCompression.stored(insertion.lines.bytes)
                try insert.execute(
                    [insertion.id, insertion.priority.rawValue, insertion.firstSequence, insertion.lines.count,
                     stored.compression.rawValue, insertion.lines.bytes.count, insertion.sender.map { Int64($0) }, nil],
                    blob: stored.blob, at: 8)
            }
        }
        for (priority, end) in writes.deletedSequenceEnds {
            try db.cachedStatement(
                sql: """
                    INSERT INTO sequence_floor (priority, next) VALUES (?, ?)
                    ON CONFLICT (priority) DO UPDATE SET next = max(next, excluded.next)
                    """
            ).execute(arguments: [priority.rawValue, end])
        }
        if !writes.extensions.isEmpty {
            let update = try db.cachedStatement(
                sql: "UPDATE chunk SET count = ?, compression = ?, size = ?, lines = ? WHERE id = ?")
            for extended in writes.extensions {
                let stored = ChunkCompression.stored(extended.lines.bytes)
                try update.execute(
                    [extended.lines.count, stored.compression.rawValue, extended.lines.bytes.count, nil, extended.id],
                    blob: stored.blob, at: 4)
            }
        }
    }
}
