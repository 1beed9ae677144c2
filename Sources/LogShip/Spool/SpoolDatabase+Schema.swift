import Foundation
import GRDB

extension SpoolDatabase {
    /// The schema version this build writes (`PRAGMA user_version`).
    ///
    /// 1: a `record` table, one row per record. 2: `input_position`. 3: records in chunks (`chunk`,
    /// `chunk_settled`); version 1 and 2 spools are converted when opened. 4: chunks compressed
    /// (``ChunkCompression``); a version 3 spool's chunks stay as they are until rewritten, and a version 3
    /// logshipd refuses the file rather than read compressed lines as NDJSON.
    static let schemaVersion = 4

    /// Creates the tables on a new spool, or brings an older one to this version; refuses a spool written by a
    /// newer schema.
    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version <= schemaVersion else {
            throw SpoolError.storage("schema version \(version) is newer than this logshipd understands")
        }
        guard version < schemaVersion else { return }
        if version == 0 {
            try db.execute(
                sql: """
                    CREATE TABLE dead_letter (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        record_id INTEGER NOT NULL,      -- the record's sequence in its class
                        priority INTEGER NOT NULL,
                        line BLOB NOT NULL,
                        status INTEGER,
                        reason TEXT NOT NULL,
                        failed_at TEXT NOT NULL
                    );
                    """)
        }
        if version < 2 {
            try db.execute(
                sql: """
                    CREATE TABLE input_position (
                        input TEXT PRIMARY KEY,    -- journal
                        cursor TEXT NOT NULL       -- where the input has read to
                    );
                    """)
        }
        if version == 3 {
            try db.execute(
                sql: """
                    ALTER TABLE chunk ADD COLUMN compression INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE chunk ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
                    UPDATE chunk SET size = length(lines);
                    """)
        } else {
            try createChunkTables(db)
            if version > 0 {
                try moveRecordsIntoChunks(db)
            }
        }
        try db.execute(sql: "PRAGMA user_version = \(schemaVersion)")
    }

    private static func createChunkTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE chunk (
                    id INTEGER PRIMARY KEY,
                    priority INTEGER NOT NULL,         -- PriorityClass.rawValue
                    first_sequence INTEGER NOT NULL,   -- the class's sequence of its first record; the others
                                                       -- follow without gaps
                    count INTEGER NOT NULL,            -- its records, settled ones included
                    lines BLOB NOT NULL,               -- the NDJSON lines, each followed by a newline, stored
                                                       -- as `compression` says (ChunkCompression)
                    compression INTEGER NOT NULL DEFAULT 0,
                    size INTEGER NOT NULL DEFAULT 0    -- the bytes of the lines before compression
                );
                CREATE TABLE chunk_settled (           -- records of a chunk that need nothing more: delivered,
                    chunk_id INTEGER NOT NULL,         -- dead-lettered or evicted; a chunk whose records are all
                    first_index INTEGER NOT NULL,      -- settled is deleted instead
                    count INTEGER NOT NULL
                );
                CREATE INDEX chunk_settled_by_chunk ON chunk_settled(chunk_id);
                """)
    }

    /// Version 1 and 2 kept one row per record with one sequence for all classes: each class's records become
    /// chunks, numbered after every old id, so that a dead letter requeued later goes before them.
    private static func moveRecordsIntoChunks(_ db: Database) throws {
        let base = try Int64.fetchOne(
            db, sql: "SELECT max(coalesce((SELECT max(id) FROM record), 0), coalesce((SELECT max(record_id) FROM dead_letter), 0))"
        ) ?? 0
        var nextID: Int64 = 1
        for priority in PriorityClass.allCases {
            var sequence = base + 1
            var entries: [SpoolEntry] = []
            var bytes = 0
            func flush() throws {
                guard !entries.isEmpty else { return }
                var writes = ChunkWrites()
                writes.insertions = [ChunkWrites.Insertion(
                    id: nextID, priority: priority, firstSequence: sequence, lines: ChunkLines(entries))]
                try execute(writes, db)
                nextID += 1
                sequence += Int64(entries.count)
                entries = []
                bytes = 0
            }
            let rows = try Row.fetchCursor(
                db, sql: "SELECT line FROM record WHERE priority = ? ORDER BY id", arguments: [priority.rawValue])
            while let row = try rows.next() {
                let line = try row.withUnsafeData(atIndex: 0) { $0.map { Array($0) } ?? [] }
                if bytes + line.count + 1 > SpoolLedger.maximumChunkBytes { try flush() }
                entries.append(SpoolEntry(priority: priority, line: line))
                bytes += line.count + 1
            }
            try flush()
        }
        try db.execute(sql: "DROP TABLE record")
    }

    /// The ledger of what the spool holds: every chunk's place and size, and the settled records of chunks
    /// delivery had started on (their lines are read, to know the sizes of the records left).
    static func loadLedger(_ db: Database, cacheBudget: SpoolLedger.CacheBudget) throws -> SpoolLedger {
        var ledger = SpoolLedger(cacheBudget: cacheBudget)
        var settledRuns: [Int64: [Range<Int>]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT chunk_id, first_index, count FROM chunk_settled") {
            let first: Int = row[1]
            let count: Int = row[2]
            settledRuns[row[0], default: []].append(first..<(first + count))
        }
        let rows = try Row.fetchCursor(
            db, sql: "SELECT id, priority, first_sequence, count, size FROM chunk ORDER BY priority, first_sequence")
        var chunks: [(PriorityClass, SpoolChunk)] = []
        while let row = try rows.next() {
            guard let priority = PriorityClass(rawValue: row[1]) else { continue }
            chunks.append((priority, SpoolChunk(id: row[0], firstSequence: row[2], count: row[3], blobBytes: row[4], lines: nil)))
        }
        for (priority, chunk) in chunks {
            var chunk = chunk
            if let runs = settledRuns[chunk.id], let lines = try lines(ofChunk: chunk.id, db), lines.count == chunk.count {
                chunk.lines = lines
                chunk.marks = RecordMarks(count: chunk.count)
                for run in runs {
                    chunk.marks!.change(run.clamped(to: 0..<chunk.count), from: .pending, to: .settled)
                }
            }
            ledger.restore(chunk, of: priority)
        }
        for row in try Row.fetchAll(db, sql: "SELECT priority, max(record_id), count(*) FROM dead_letter GROUP BY priority") {
            ledger.deadLetters += row[2] as Int
            guard let priority = PriorityClass(rawValue: row[0]) else { continue }
            ledger.queues[priority.rawValue].nextSequence = max(
                ledger.queues[priority.rawValue].nextSequence, (row[1] as Int64) + 1)
        }
        return ledger
    }
}
