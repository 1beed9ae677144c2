import Foundation
import GRDB
import Testing

import LogShipTestKit
@testable import LogShip

/// How the SQLite spool keeps records in chunks: what reaches the file, what survives a restart, and what is
/// read back when lines are not kept in memory.
@Suite("SQLite spool chunks")
struct ChunkedSpoolTests {
    func open(
        _ path: String, cacheBudget: SpoolLedger.CacheBudget = .init(bytes: SQLiteSpool.defaultCacheBytes),
        maximumBytes: Int = 1 << 30
    ) async throws -> SQLiteSpool {
        try await SQLiteSpool.open(
            path: path, maximumBytes: maximumBytes, minimumFreeDiskBytes: 0, cacheBudget: cacheBudget, logger: .test)
    }

    /// Rows of the chunk table and of its settled runs, read from the file as another process would, off the
    /// cooperative pool.
    func rows(_ path: String) async throws -> (chunks: Int, settledRuns: Int) {
        try await offloaded {
            let file = try DatabaseQueue(path: path)
            defer { try? file.close() }
            return try file.read { db in
                (try Int.fetchOne(db, sql: "SELECT count(*) FROM chunk") ?? -1,
                 try Int.fetchOne(db, sql: "SELECT count(*) FROM chunk_settled") ?? -1)
            }
        }
    }

    @Test("a commit of many records writes one row; records committed one at a time extend it")
    func oneRowPerCommit() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let spool = try await open(path)
        _ = try await spool.append((0..<500).map { entry(.info, "i\($0)") })
        #expect(try await rows(path).chunks == 1)
        for index in 500..<550 {
            _ = try await spool.append([entry(.info, "i\(index)")])
        }
        #expect(try await rows(path).chunks == 1, "small commits extend the class's newest chunk")
        _ = try await spool.append([entry(.error, "e0")])
        #expect(try await rows(path).chunks == 2, "each class has its own chunks")
        #expect(messages(try await claimBatch(spool, .info, maxRecords: 1000)) == (0..<550).map { "i\($0)" })
        await spool.close()
    }

    @Test("""
        a restart keeps what was settled in a chunk: delivered and dead-lettered records stay gone, the rest is pending
        """)
    func partlySettledChunk() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let first = try await open(path)
        _ = try await first.append((1...5).map { entry(.warning, "w\($0)") })
        try await first.acknowledge(try await claimBatch(first, .warning, maxRecords: 2))
        try await first.settle(
            try await claimBatch(first, .warning, maxRecords: 1),
            .deadLetter(DeliveryFailure(status: 400, reason: "bad")))
        _ = try await claimBatch(first, .warning, maxRecords: 1)  // claimed when the process ends
        #expect(try await rows(path) == (chunks: 1, settledRuns: 1), "one run: w1 to w3")
        await first.close()

        let second = try await open(path)
        let statistics = await second.statistics()
        #expect(statistics.pending[.warning] == 2 && statistics.claimed == 0 && statistics.deadLetters == 1)
        #expect(statistics.bytes == 3 * (2 + SpoolEntry.overhead), "two records and the dead letter")
        let rest = try await claimBatch(second, .warning)
        #expect(messages(rest) == ["w4", "w5"])
        try await second.acknowledge(rest)
        #expect(try await rows(path) == (chunks: 0, settledRuns: 0), "a chunk whose records are all settled is deleted")
        #expect(try await second.requeueDeadLetters(.all) == 1)
        #expect(messages(try await claimBatch(second, .warning)) == ["w3"])
        await second.close()
    }

    @Test("chunks whose lines are not kept in memory are read back in order when their turn comes")
    func linesReadBack() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let spool = try await open(path, cacheBudget: .init(delivering: 0, stalled: 0))
        // Forty chunks of 100 records: past the budget, only the head and the newest chunk keep their lines.
        for chunk in 0..<40 {
            _ = try await spool.append((0..<100).map { entry(.info, "c\(chunk)-\($0)", padding: 2000) })
        }
        #expect(spool.cachedLineBytes < 6 * 100 * 2010, "lines of \(spool.cachedLineBytes) bytes kept")
        var claimed: [String] = []
        while case .batch(let batch, _) = try await spool.claim(
            .info, limits: BatchLimits(maxRecords: 150, maxBytes: 1 << 30)
        ) {
            claimed += messages(batch)
            try await spool.acknowledge(batch)
        }
        #expect(claimed == (0..<40).flatMap { chunk in (0..<100).map { "c\(chunk)-\($0)" } })
        #expect(await spool.statistics().bytes == 0)
        await spool.close()
    }

    @Test("lines of a backlog are kept while acknowledgements come in, and let go once they stop")
    func cacheFollowsDelivery() {
        var ledger = SpoolLedger(cacheBudget: .init(delivering: 1 << 20, stalled: 0), instance: .random())
        let start = Date(timeIntervalSince1970: 1_795_255_200)
        func chunk(_ number: Int64) -> ChunkWrites {
            var writes = ChunkWrites()
            writes.insertions = [ChunkWrites.Insertion(
                id: number, priority: .info, firstSequence: number * 100,
                lines: ChunkLines((0..<100).map { entry(.info, "c\(number)-\($0)", padding: 1000) }))]
            return writes
        }
        ledger.lastAcknowledged = start
        for number in Int64(1)...8 { ledger.apply(chunk(number), now: start.addingTimeInterval(1)) }
        #expect(ledger.cachedBytes > 7 * 100 * 1000, "delivering: the backlog's lines stay in memory")
        ledger.apply(chunk(9), now: start.addingTimeInterval(SpoolLedger.deliveringWindow + 1))
        #expect(ledger.cachedBytes < 4 * 101 * 1010, "stalled: only the head chunks and the newest keep theirs")
    }

    @Test("a requeue changes nothing a claim could take until its writes have committed")
    func requeueMarksAfterCommit() {
        var ledger = SpoolLedger(cacheBudget: .init(delivering: 1 << 20, stalled: 1 << 20), instance: .random())
        var insertion = ChunkWrites()
        insertion.insertions = [ChunkWrites.Insertion(
            id: 1, priority: .info, firstSequence: 10, lines: ChunkLines((0..<3).map { entry(.info, "i\($0)") }))]
        ledger.apply(insertion)
        ledger.setMarks(.settled, of: 1..<2, chunkAt: 0, .info, from: .pending)  // i1 became a dead letter
        ledger.addDeadLetters(count: 1, lineBytes: 2)

        let letters = [SpoolLedger.RequeuedLetter(priority: .info, sequence: 11, line: Array("i1".utf8))]
        let (writes, changes) = ledger.requeue(letters)
        #expect(writes.settledRuns[1] == [], "the row loses its settled run")
        #expect(ledger.statistics().pending[.info] == 2, "planned, not yet pending")
        #expect(ledger.queues[PriorityClass.info.rawValue].chunks[0].mark(1) == .settled)

        ledger.markRequeued(changes, letters: letters)
        #expect(ledger.statistics().pending[.info] == 3)
        #expect(ledger.statistics().deadLetters == 0)
        #expect(ledger.queues[PriorityClass.info.rawValue].chunks[0].mark(1) == .pending)
    }

    @Test("""
        when the disk is what is short, an eviction empties whole chunks: records evicted from a kept chunk free no disk
        """)
    func diskShortEvictsWholeChunks() throws {
        var ledger = SpoolLedger(cacheBudget: .init(delivering: 1 << 20, stalled: 1 << 20), instance: .random())
        var insertion = ChunkWrites()
        insertion.insertions = [ChunkWrites.Insertion(
            id: 1, priority: .debug, firstSequence: 0,
            lines: ChunkLines((0..<10).map { entry(.debug, "d\($0)", padding: 1000) }))]
        ledger.apply(insertion)
        ledger.setMarks(.settled, of: 0..<1, chunkAt: 0, .debug, from: .pending)  // touched: d0 was delivered

        let newcomer = SpoolAppend(entries: [entry(.error, "e0", padding: 1000)])
        guard case .plan(let budgetShort) = ledger.planAppend(
            [newcomer], maximumBytes: ledger.bytes + 500, disk: .init(bytes: 1 << 30))
        else { Issue.record("planned no append"); return }
        #expect(budgetShort.receipts == [AppendReceipt(accepted: 1, evicted: 1)], "the budget: one record makes room")
        ledger.revert(budgetShort.changes)

        guard case .plan(let diskShort) = ledger.planAppend([newcomer], maximumBytes: 1 << 30, disk: .init(bytes: 500))
        else { Issue.record("planned no append"); return }
        #expect(diskShort.receipts == [AppendReceipt(accepted: 1, evicted: 9)], "the disk: the chunk's nine pending go")
        #expect(diskShort.writes.deletions.map(\.id) == [1], "and its row is deleted")
    }

    @Test("an eviction that needs part of a chunk not in memory reads its lines and evicts only what it needs")
    func partialEvictionReadsLines() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        // 4 KiB records: ten of them make a chunk too large to be extended by the next commit.
        let recordSize = 4000 + SpoolEntry.overhead
        let first = try await open(path, maximumBytes: 60 * recordSize)
        for chunk in 0..<6 {
            _ = try await first.append((0..<10).map { entry(.debug, "d\(chunk)\($0)", padding: 3997) })
        }
        #expect(try await rows(path).chunks == 6)
        await first.close()

        // After a restart no chunk's lines are in memory.
        let spool = try await open(path, maximumBytes: 60 * recordSize)
        #expect(spool.cachedLineBytes == 0)
        // Full: three error records push out the three oldest debug records, not a whole chunk of ten.
        let receipt = try await spool.append((0..<3).map { entry(.error, "e\($0)", padding: 3998) })
        #expect(receipt == AppendReceipt(accepted: 3, evicted: 3))
        #expect(await spool.statistics().pending[.debug] == 57)
        #expect(messages(try await claimBatch(spool, .debug, maxRecords: 2)) == ["d03", "d04"])
        await spool.close()
    }

    @Test("chunks reach the file compressed, with the size of their lines, and read back whole after a restart")
    func compressedChunks() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let texts = (0..<2000).map { "GET /api/v1/orders/\($0) 200 12ms user=u\($0 % 50) agent=curl/8.5.0" }
        let first = try await open(path)
        _ = try await first.append(texts.map { entry(.info, $0) })
        await first.close()

        let file = try DatabaseQueue(path: path)
        let stored = try await file.read { db in
            try Row.fetchAll(db, sql: "SELECT compression, size, length(lines) FROM chunk").map { row in
                (compression: row[0] as Int, size: row[1] as Int, blob: row[2] as Int)
            }
        }
        try file.close()
        #expect(!stored.isEmpty && stored.allSatisfy { $0.compression == ChunkCompression.zstd.rawValue })
        let size = stored.reduce(0) { $0 + $1.size }
        #expect(size == texts.reduce(0) { $0 + $1.utf8.count + 1 }, "the size recorded is that of the lines")
        #expect(stored.reduce(0) { $0 + $1.blob } * 4 < size, "lines alike compress to less than a quarter")

        // No lines kept in memory: every claim reads its chunk back from the file.
        let second = try await open(path, cacheBudget: .init(delivering: 0, stalled: 0))
        #expect(await second.statistics().pending[.info] == texts.count)
        var claimed: [String] = []
        while case .batch(let batch, _) = try await second.claim(
            .info, limits: BatchLimits(maxRecords: 300, maxBytes: 1 << 30)
        ) {
            claimed += messages(batch)
            try await second.acknowledge(batch)
        }
        #expect(claimed == texts)
        await second.close()
    }

    @Test("lines that compression would not shrink are stored as they are")
    func incompressibleLines() throws {
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<4096).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let stored = ChunkCompression.stored(noise)
        #expect(stored.compression == .none && stored.blob == noise)

        let lines = Array(String(repeating: "{\"message\":\"disk full\"}\n", count: 200).utf8)
        let compressed = ChunkCompression.stored(lines)
        #expect(compressed.compression == .zstd && compressed.blob.count < lines.count)
        #expect(
            try compressed.blob.withUnsafeBytes { try ChunkCompression.zstd.lines(fromBlob: $0, size: lines.count) }
                == lines)
    }

    @Test("a damaged compressed chunk is refused with a clear error, not read as lines")
    func damagedCompressedChunk() throws {
        let lines = Array(String(repeating: "{\"message\":\"disk full\"}\n", count: 200).utf8)
        let frame = ChunkCompression.stored(lines).blob
        #expect {
            try Array(frame.prefix(frame.count / 2)).withUnsafeBytes {
                try ChunkCompression.zstd.lines(fromBlob: $0, size: lines.count)
            }
        } throws: { "\($0)".contains("a compressed chunk does not decompress") }
        #expect {
            try frame.withUnsafeBytes { try ChunkCompression.zstd.lines(fromBlob: $0, size: lines.count + 1) }
        } throws: { "\($0)".contains("a compressed chunk does not decompress") }
    }

    @Test("a version 4 spool gains the chunks' sender: its chunks are of no known sender, new ones of theirs")
    func convertsVersion4() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let old = try DatabaseQueue(path: path)
        try await old.write { db in
            try db.execute(sql: """
                CREATE TABLE dead_letter (id INTEGER PRIMARY KEY AUTOINCREMENT, record_id INTEGER NOT NULL,
                    priority INTEGER NOT NULL, line BLOB NOT NULL, status INTEGER, reason TEXT NOT NULL,
                    failed_at TEXT NOT NULL);
                CREATE TABLE input_position (input TEXT PRIMARY KEY, cursor TEXT NOT NULL);
                CREATE TABLE chunk (id INTEGER PRIMARY KEY, priority INTEGER NOT NULL,
                    first_sequence INTEGER NOT NULL, count INTEGER NOT NULL, lines BLOB NOT NULL,
                    compression INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE chunk_settled (chunk_id INTEGER NOT NULL, first_index INTEGER NOT NULL,
                    count INTEGER NOT NULL);
                CREATE INDEX chunk_settled_by_chunk ON chunk_settled(chunk_id);
                PRAGMA user_version = 4;
                """)
            try db.execute(
                sql: "INSERT INTO chunk (id, priority, first_sequence, count, lines, size) VALUES (1, 1, 1, 2, ?, 6)",
                arguments: [Data("i1\ni2\n".utf8)])
        }
        try old.close()

        let spool = try await open(path)
        _ = try await spool.append([SpoolEntry(priority: .info, line: Array("i3".utf8), sender: 1000)])
        #expect(messages(try await claimBatch(spool, .info)) == ["i1", "i2", "i3"])
        await spool.close()
        let file = try DatabaseQueue(path: path)
        let senders = try await file.read { db in
            try Row.fetchAll(db, sql: "SELECT sender FROM chunk ORDER BY id").map { $0[0] as Int64? }
        }
        #expect(senders == [nil, 1000])
        #expect(
            try await file.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == SQLiteSpool.schemaVersion)
        try file.close()
    }

    @Test("a version 3 spool (chunks as they are) is converted when opened; its chunks read back unchanged")
    func convertsVersion3() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let old = try DatabaseQueue(path: path)
        try await old.write { db in
            try db.execute(sql: """
                CREATE TABLE dead_letter (id INTEGER PRIMARY KEY AUTOINCREMENT, record_id INTEGER NOT NULL,
                    priority INTEGER NOT NULL, line BLOB NOT NULL, status INTEGER, reason TEXT NOT NULL,
                    failed_at TEXT NOT NULL);
                CREATE TABLE input_position (input TEXT PRIMARY KEY, cursor TEXT NOT NULL);
                CREATE TABLE chunk (id INTEGER PRIMARY KEY, priority INTEGER NOT NULL,
                    first_sequence INTEGER NOT NULL, count INTEGER NOT NULL, lines BLOB NOT NULL);
                CREATE TABLE chunk_settled (chunk_id INTEGER NOT NULL, first_index INTEGER NOT NULL,
                    count INTEGER NOT NULL);
                CREATE INDEX chunk_settled_by_chunk ON chunk_settled(chunk_id);
                PRAGMA user_version = 3;
                """)
            try db.execute(
                sql: "INSERT INTO chunk (id, priority, first_sequence, count, lines) VALUES (1, 1, 1, 3, ?)",
                arguments: [Data("i1\ni2\ni3\n".utf8)])
        }
        try old.close()

        let spool = try await open(path)
        #expect(await spool.statistics().pending[.info] == 3)
        #expect(await spool.statistics().bytes == 3 * (2 + SpoolEntry.overhead))
        _ = try await spool.append([entry(.info, "i4")])
        #expect(messages(try await claimBatch(spool, .info)) == ["i1", "i2", "i3", "i4"])
        await spool.close()
        let file = try DatabaseQueue(path: path)
        #expect(
            try await file.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == SQLiteSpool.schemaVersion)
        try file.close()
    }

    @Test("a version 2 spool (a row per record) is converted when opened, records and dead letters kept")
    func convertsVersion2() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let old = try DatabaseQueue(path: path)
        try await old.write { db in
            try db.execute(sql: """
                CREATE TABLE record (id INTEGER PRIMARY KEY AUTOINCREMENT, priority INTEGER NOT NULL,
                    line BLOB NOT NULL, size INTEGER NOT NULL, not_before REAL);
                CREATE INDEX record_by_class ON record(priority);
                CREATE TABLE dead_letter (id INTEGER PRIMARY KEY AUTOINCREMENT, record_id INTEGER NOT NULL,
                    priority INTEGER NOT NULL, line BLOB NOT NULL, status INTEGER, reason TEXT NOT NULL,
                    failed_at TEXT NOT NULL);
                CREATE TABLE input_position (input TEXT PRIMARY KEY, cursor TEXT NOT NULL);
                INSERT INTO input_position VALUES ('journal', 's=1;i=9');
                INSERT INTO dead_letter (record_id, priority, line, status, reason, failed_at)
                    VALUES (2, 1, 'i0', 400, 'bad', '2026-11-22T00:00:00.000000Z');
                PRAGMA user_version = 2;
                """)
            for (index, (priority, line)) in [(1, "i1"), (4, "c1"), (1, "i2"), (3, "e1"), (1, "i3")].enumerated() {
                try db.execute(
                    sql: "INSERT INTO record (id, priority, line, size) VALUES (?, ?, ?, ?)",
                    arguments: [index + 3, priority, Data(line.utf8), line.utf8.count])
            }
        }
        try old.close()

        let spool = try await open(path)
        let statistics = await spool.statistics()
        #expect(statistics.pending == [.debug: 0, .info: 3, .warning: 0, .error: 1, .crash: 1])
        #expect(
            statistics.deadLetters == 1 && statistics.bytes == 6 * (2 + SpoolEntry.overhead), "five records, a letter")
        #expect(try await spool.savedPosition(of: "journal") == "s=1;i=9")
        #expect(try await spool.requeueDeadLetters(.all) == 1)
        #expect(
            messages(try await claimBatch(spool, .info)) == ["i0", "i1", "i2", "i3"], "the old dead letter goes first")
        #expect(messages(try await claimBatch(spool, .crash)) == ["c1"])
        await spool.close()
        let file = try DatabaseQueue(path: path)
        #expect(
            try await file.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == SQLiteSpool.schemaVersion)
        try file.close()
    }
}
