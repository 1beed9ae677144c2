import Foundation
import GRDB
import Logging

extension SQLiteSpool {
    /// The schema version this build writes (`PRAGMA user_version`).
    ///
    /// 1: a `record` table, one row per record. 2: `input_position`. 3: records in chunks (`chunk`,
    /// `chunk_settled`); version 1 and 2 spools are converted when opened. 4: chunks compressed
    /// (``ChunkCompression``); a version 3 spool's chunks stay as they are until rewritten, and a version 3
    /// logshipd refuses the file rather than read compressed lines as NDJSON. 5: each chunk's sender (`sender`,
    /// NULL for chunks written before); a version 4 logshipd refuses the file rather than mix senders in a chunk.
    static let schemaVersion = 5

    /// Creates the tables on a new spool, or brings an older one to this version; refuses a spool written by a
    /// newer schema.
    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version <= schemaVersion else {
            throw SpoolError.storage("schema version \(version) is newer than this logshipd understands")
        }
        guard version >= 0 else { throw SpoolFileDamage(reason: "its schema version \(version) was never written") }
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
        }
        try db.execute(
            sql: """
                CREATE TABLE spool_instance (          -- one row: the spool's life (SpoolInstance), 32 hex digits
                    id TEXT NOT NULL
                );
                CREATE TABLE sequence_floor (          -- per class, the sequence after the last record of the
                    priority INTEGER PRIMARY KEY,      -- chunks deleted in this instance: never given again
                    next INTEGER NOT NULL
                );
                """)
        if version == 3 || version == 4 {
            try db.execute(sql: "ALTER TABLE chunk ADD COLUMN sender INTEGER")
        } else if version < 3 {
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
                    size INTEGER NOT NULL DEFAULT 0,   -- the bytes of the lines before compression
                    sender INTEGER                     -- the uid that sent every record of it; NULL if unknown
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
            db,
            sql: "SELECT max(coalesce((SELECT max(id) FROM record), 0), "
                + "coalesce((SELECT max(record_id) FROM dead_letter), 0))"
        ) ?? 0
        guard (0..<SpoolChunk.sequenceLimit / 2).contains(base) else {
            throw SpoolFileDamage(reason: "its records are numbered up to \(base), beyond any spool")
        }
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
    ///
    /// A row whose numbers cannot be true (a negative size, a count that overflows its sequences, a class this
    /// build does not know) is quarantined here, in the transaction under way; a settled run that cannot be is
    /// left out with a warning. Nothing read from the file is taken at its word where it could trap.
    static func loadLedger(_ db: Database, cacheBudget: SpoolLedger.CacheBudget, logger: Logger) throws -> SpoolLedger {
        var ledger = SpoolLedger(cacheBudget: cacheBudget, instance: try instance(db))
        let settledRuns = try loadSettledRuns(db, logger: logger)
        var damaged: [(id: Int64, storedPriority: Int64?, count: Int?, damage: ChunkDamage)] = []
        var chunks: [(priority: PriorityClass, chunk: SpoolChunk)] = []
        let rows = try Row.fetchCursor(
            db,
            sql: "SELECT id, priority, first_sequence, count, size, sender FROM chunk "
                + "ORDER BY priority, first_sequence")
        while let row = try rows.next() {
            // The rowid: always an integer.
            guard let id = row.integer(atIndex: 0) else { continue }
            switch plausibleChunk(id, row, after: chunks.last) {
            case .success(let chunk):
                chunks.append(chunk)
            case .failure(let damage):
                let count = row.integer(atIndex: 3).flatMap {
                    (1...Int64(SpoolChunk.maximumBytes)).contains($0) ? Int($0) : nil
                }
                damaged.append((id, row.integer(atIndex: 1), count, damage))
            }
        }
        var unreadable: [(priority: PriorityClass, id: Int64, damage: ChunkDamage)] = []
        for (priority, chunk) in chunks {
            var chunk = chunk
            guard let runs = settledRuns[chunk.id] else {
                ledger.restore(chunk, of: priority)
                continue
            }
            chunk.marks = RecordMarks(count: chunk.count)
            for run in mergedRuns(runs) {
                chunk.marks?.change(run.clamped(to: 0..<chunk.count), from: .pending, to: .settled)
            }
            do {
                chunk.lines = try lines(ofChunk: chunk.id, db)
            } catch let damage as ChunkDamage {
                unreadable.append((priority, chunk.id, damage))
            }
            ledger.restore(chunk, of: priority)
        }
        try loadDeadLetters(db, into: &ledger, logger: logger)
        try loadSequenceFloors(db, into: &ledger)
        // Taken in with their settled records marked, then out: those need nothing, the rest are letters. Only now
        // that every chunk and dead letter is counted: lines beyond a row's count get places after all of them,
        // never the places of a chunk later in the class.
        for (priority, id, damage) in unreadable {
            guard let quarantine = ledger.planQuarantine(ofChunk: id, priority, damage: damage) else { continue }
            try write(quarantine, db)
            ledger.applyQuarantine(quarantine)
            report(quarantine, logger: logger)
        }
        for (id, storedPriority, count, damage) in damaged {
            var damage = damage
            do {
                damage.readable = try lines(ofChunk: id, db)
            } catch let read as ChunkDamage {
                damage.readable = read.readable
            }
            // Every readable line gets a new place at the end of its class: the row's own cannot be believed. A
            // class this build does not know has none; its letters stay letters.
            let priority = storedPriority.flatMap { PriorityClass(rawValue: Int($0)) }
            var nextSequence = priority.map { ledger.queues[$0.rawValue].nextSequence } ?? 0
            let quarantine = SpoolLedger.Quarantine(
                chunkID: id, storedPriority: Int(storedPriority ?? -1), count: count, firstSequence: nil,
                settled: { _ in false }, settledCount: 0, damage: damage, nextSequence: &nextSequence)
            try write(quarantine, db)
            ledger.applyQuarantine(quarantine)
            report(quarantine, logger: logger)
        }
        return ledger
    }

    /// The spool's instance: the stored one while the spool holds records or dead letters, which may have been
    /// sent under it; a new one, stored, when it holds none (a new spool, or one emptied), with the class floors
    /// of the old one dropped.
    private static func instance(_ db: Database) throws -> SpoolInstance {
        let holdsRecords = try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM chunk) OR EXISTS (SELECT 1 FROM dead_letter)") ?? false
        if holdsRecords, let stored = try String.fetchOne(db, sql: "SELECT id FROM spool_instance"),
            let instance = SpoolInstance(hex: stored)
        {
            return instance
        }
        let instance = SpoolInstance.random()
        try db.execute(sql: "DELETE FROM spool_instance")
        try db.execute(sql: "DELETE FROM sequence_floor")
        try db.execute(sql: "INSERT INTO spool_instance (id) VALUES (?)", arguments: [instance.description])
        return instance
    }

    /// Keeps each class's next sequence at or beyond its floor: the records that had the sequences below may be
    /// delivered and deleted, but a receiver holds their ids.
    private static func loadSequenceFloors(_ db: Database, into ledger: inout SpoolLedger) throws {
        for row in try Row.fetchAll(db, sql: "SELECT priority, next FROM sequence_floor") {
            guard let priority = row.integer(atIndex: 0).flatMap({ PriorityClass(rawValue: Int($0)) }),
                let next = row.integer(atIndex: 1), (0..<SpoolChunk.sequenceLimit).contains(next)
            else { continue }
            ledger.queues[priority.rawValue].nextSequence = max(ledger.queues[priority.rawValue].nextSequence, next)
        }
    }

    /// The chunk a row describes, or why the row cannot be believed: numbers out of range or overflowing, a class
    /// this build does not know, or sequences overlapping those of `previous`, the chunk before it.
    private static func plausibleChunk(
        _ id: Int64, _ row: Row, after previous: (priority: PriorityClass, chunk: SpoolChunk)?
    ) -> Result<(priority: PriorityClass, chunk: SpoolChunk), ChunkDamage> {
        guard let priority = row.integer(atIndex: 1).flatMap({ PriorityClass(rawValue: Int($0)) }) else {
            let stored = row.text(atIndex: 1) ?? "NULL"
            return .failure(.implausibleRow("its class (\(stored)) is not one this build knows"))
        }
        guard let first = row.integer(atIndex: 2), let count = row.integer(atIndex: 3),
            let size = row.integer(atIndex: 4)
        else { return .failure(.implausibleRow("its first sequence, count or size is not a number")) }
        guard id < Int64.max else { return .failure(.implausibleRow("its id leaves no room for another chunk")) }
        guard (0...Int64(SpoolChunk.maximumBytes)).contains(size) else {
            return .failure(.implausibleRow("its size (\(size)) is out of range"))
        }
        // Every record takes one byte at least: its newline.
        guard count >= 1, count <= size else {
            return .failure(.implausibleRow("its count (\(count)) cannot be held in \(size) bytes"))
        }
        guard first >= 0, first <= SpoolChunk.sequenceLimit - count else {
            return .failure(.implausibleRow("its sequences (\(count) from \(first)) are out of range"))
        }
        if let previous, previous.priority == priority, first < previous.chunk.endSequence {
            return .failure(.implausibleRow("its sequences overlap those of chunk \(previous.chunk.id)"))
        }
        // A sender that is no uid (changed by hand) is an unknown one: it only orders eviction.
        let sender = row.integer(atIndex: 5).flatMap { UInt32(exactly: $0) }
        let chunk = SpoolChunk(
            id: id, firstSequence: first, count: Int(count), blobBytes: Int(size), lines: nil, sender: sender)
        return .success((priority, chunk))
    }

    /// Settled runs by chunk; a run that cannot be (negative, overflowing) is left out with a warning.
    private static func loadSettledRuns(_ db: Database, logger: Logger) throws -> [Int64: [Range<Int>]] {
        var runs: [Int64: [Range<Int>]] = [:]
        var ignored = 0
        let limit = Int64(SpoolChunk.maximumBytes)
        for row in try Row.fetchAll(db, sql: "SELECT chunk_id, first_index, count FROM chunk_settled") {
            guard let id = row.integer(atIndex: 0), let first = row.integer(atIndex: 1),
                let count = row.integer(atIndex: 2), (0..<limit).contains(first), (1...limit).contains(count)
            else {
                ignored += 1
                continue
            }
            runs[id, default: []].append(Int(first)..<Int(first + count))
        }
        if ignored > 0 {
            logger.warning(
                "settled runs of the spool that cannot be were left out; the records they name are delivered again",
                metadata: ["logship.spool.ignored_runs": "\(ignored)"])
        }
        return runs
    }

    /// `runs` in order, those that overlap or touch made one.
    static func mergedRuns(_ runs: [Range<Int>]) -> [Range<Int>] {
        var merged: [Range<Int>] = []
        for run in runs.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, run.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, run.upperBound)
            } else {
                merged.append(run)
            }
        }
        return merged
    }

    /// Counts the dead letters, and keeps each class's next sequence beyond theirs; letters numbered out of range
    /// are counted and left for a requeue to place at the end of their class.
    private static func loadDeadLetters(_ db: Database, into ledger: inout SpoolLedger, logger: Logger) throws {
        if let row = try Row.fetchOne(
            db, sql: "SELECT count(*), coalesce(sum(length(CAST(line AS BLOB))), 0) FROM dead_letter"
        ) {
            ledger.addDeadLetters(
                count: row.integer(atIndex: 0).map(Int.init) ?? 0,
                lineBytes: row.integer(atIndex: 1).map(Int.init) ?? 0)
        }
        let inRange = "typeof(record_id) = 'integer' AND record_id BETWEEN 0 AND \(SpoolChunk.sequenceLimit - 1)"
        for row in try Row.fetchAll(
            db, sql: "SELECT priority, max(record_id) FROM dead_letter WHERE \(inRange) GROUP BY priority")
        {
            guard let priority = row.integer(atIndex: 0).flatMap({ PriorityClass(rawValue: Int($0)) }),
                let last = row.integer(atIndex: 1)
            else { continue }
            ledger.queues[priority.rawValue].nextSequence = max(ledger.queues[priority.rawValue].nextSequence, last + 1)
        }
        let outOfRange = try Int.fetchOne(db, sql: "SELECT count(*) FROM dead_letter WHERE NOT (\(inRange))") ?? 0
        if outOfRange > 0 {
            logger.warning(
                "dead letters of the spool are numbered out of range; a requeue puts them at the end of their class",
                metadata: ["logship.spool.dead_letters": "\(outOfRange)"])
        }
    }
}
