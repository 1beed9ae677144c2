import AsyncHTTPClient
import Foundation
import GRDB
import NIOPosix
import Testing

import LogShipTestKit
@testable import LogShip

/// Damage in the SQLite spool is contained: a damaged chunk is quarantined without stalling its class or
/// eviction, a file that is no database is set aside for a fresh one, and tampered rows are clean errors.
@Suite("Spool damage")
struct SpoolDamageTests {
    /// The records of chunk `letter` (a, b, c): ten, each in a commit of its own chunk.
    static func records(_ letter: String) -> [String] { (0..<10).map { "\(letter)\($0)" } }

    /// A spool whose info class holds three chunks of ten records, `a0`…`a9` (chunk 1), `b0`…`b9` (chunk 2) and
    /// `c0`…`c9` (chunk 3): 4 KiB records, so that each commit writes a chunk of its own.
    static func threeChunks() async throws -> String {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let spool = try await open(path)
        for letter in ["a", "b", "c"] {
            _ = try await spool.append(records(letter).map { entry(.info, $0, padding: 3998) })
        }
        await spool.close()
        return path
    }

    /// No lines kept in memory: every claim reads its chunk from the file.
    static func open(_ path: String, maximumBytes: Int = 1 << 30) async throws -> SQLiteSpool {
        try await SQLiteSpool.open(
            path: path, maximumBytes: maximumBytes, minimumFreeDiskBytes: 0,
            cacheBudget: .init(delivering: 0, stalled: 0), logger: .test)
    }

    /// Changes the spool file as another process (or a failing disk) would: off the cooperative pool, since the
    /// commit and the close (which checkpoints a WAL) wait for the disk.
    static func tamper(_ path: String, _ sql: String, arguments: StatementArguments = []) async throws {
        try await offloaded {
            let file = try DatabaseQueue(path: path)
            defer { try? file.close() }
            try file.write { try $0.execute(sql: sql, arguments: arguments) }
        }
    }

    /// Claims every record of `priority`, acknowledging each batch.
    static func claimAll(_ spool: SQLiteSpool, _ priority: PriorityClass = .info) async throws -> [String] {
        var claimed: [String] = []
        let limits = BatchLimits(maxRecords: 7, maxBytes: 1 << 30)
        while case .batch(let batch, _) = try await spool.claim(priority, limits: limits) {
            claimed += messages(batch)
            try await spool.acknowledge(batch)
        }
        return claimed
    }

    /// How chunk 2 is damaged, and how many of its ten records can still be read.
    enum ChunkDamage: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case notAFrame = "its blob is no zstd frame"
        case truncatedFrame = "its zstd frame is cut in half"
        case countTooSmall = "its count says one record fewer than its lines hold"
        case uncompressedSizeOff = "its lines are stored as they are, with a size that does not match"
        case unknownCompression = "it is stored in a form this build does not know"

        var testDescription: String { rawValue }

        var sql: String {
            switch self {
            case .notAFrame: "UPDATE chunk SET lines = randomblob(200) WHERE id = 2"
            case .truncatedFrame: "UPDATE chunk SET lines = substr(lines, 1, length(lines) / 2) WHERE id = 2"
            case .countTooSmall: "UPDATE chunk SET count = count - 1 WHERE id = 2"
            case .uncompressedSizeOff:
                "UPDATE chunk SET compression = 0, size = size + 7, lines = CAST(? AS BLOB) WHERE id = 2"
            case .unknownCompression: "UPDATE chunk SET compression = 7 WHERE id = 2"
            }
        }

        /// The records of chunk 2 that can be read, and so become dead letters.
        var readable: [String] {
            switch self {
            case .countTooSmall, .uncompressedSizeOff: SpoolDamageTests.records("b")
            case .notAFrame, .truncatedFrame, .unknownCompression: []
            }
        }


        func apply(to path: String) async throws {
            guard self == .uncompressedSizeOff else { return try await SpoolDamageTests.tamper(path, sql) }
            let lines = SpoolDamageTests.records("b").map { $0 + String(repeating: " ", count: 3998) + "\n" }.joined()
            try await SpoolDamageTests.tamper(path, sql, arguments: [Data(lines.utf8)])
        }
    }

    @Test("a damaged chunk mid-class is quarantined: the rest is claimed, what is readable is dead-lettered",
        arguments: ChunkDamage.allCases)
    func damagedChunkQuarantined(_ damage: ChunkDamage) async throws {
        let path = try await Self.threeChunks()
        try await damage.apply(to: path)

        let spool = try await Self.open(path)
        #expect(try await Self.claimAll(spool) == Self.records("a") + Self.records("c"))
        let letters = try await spool.deadLetters(limit: 100)
        #expect(letters.map { $0.line.trimmingCharacters(in: .whitespaces) } == damage.readable)
        #expect(letters.allSatisfy { $0.reason.hasPrefix("spool chunk 2 was damaged: ") && $0.priority == "info" })
        let statistics = await spool.statistics()
        // Ten records either way: nine by the count and a line beyond it, or ten by the count, read or not.
        #expect(statistics.quarantinedChunks == 1 && statistics.quarantinedRecords == 10)
        #expect(statistics.unreadableRecords == 10 - damage.readable.count)
        #expect(statistics.deadLetters == damage.readable.count && statistics.pendingTotal == 0)
        // The class goes on: records appended after the quarantine are claimed too.
        _ = try await spool.append([entry(.info, "d0")])
        #expect(try await Self.claimAll(spool) == ["d0"])
        // What was read is not lost: a requeue gives it back to its class, in its order.
        #expect(try await spool.requeueDeadLetters(.all) == damage.readable.count)
        #expect(try await Self.claimAll(spool) == damage.readable)
        await spool.close()
    }

    @Test("a zstd frame cut short: the whole lines before the cut become dead letters, the rest are counted lost")
    func cutFrameSalvaged() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        var generator = SystemRandomNumberGenerator()
        // 50 records of 4 KiB that compress to about half: a chunk of two zstd blocks (128 KiB of lines each).
        let lines = (0..<50).map { index in
            "b\(index) " + (0..<4000).map { _ in String(UInt8.random(in: 0...15, using: &generator), radix: 16) }
                .joined()
        }
        let first = try await Self.open(path)
        _ = try await first.append([entry(.info, "a0", padding: 40_000)])  // too large to be extended
        _ = try await first.append(lines.map { entry(.info, $0) })
        _ = try await first.append([entry(.info, "c0")])
        await first.close()
        try await Self.tamper(path, "UPDATE chunk SET lines = substr(lines, 1, length(lines) * 9 / 10) WHERE id = 2")

        let spool = try await Self.open(path)
        #expect(try await Self.claimAll(spool) == ["a0", "c0"])
        let letters = try await spool.deadLetters(limit: 100).map(\.line)
        #expect(letters.count >= 20 && letters.count < 50, "the first block's lines, \(letters.count)")
        #expect(letters == Array(lines.prefix(letters.count)), "whole lines, in order")
        #expect(await spool.statistics().unreadableRecords == 50 - letters.count)
        await spool.close()
    }

    @Test("with the spool full, eviction quarantines the damaged chunk it meets: a crash record and appends are stored")
    func evictionPastDamagedChunk() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let recordSize = 4000 + SpoolEntry.overhead
        let first = try await Self.open(path, maximumBytes: 60 * recordSize)
        for chunk in 0..<6 {
            _ = try await first.append((0..<10).map { entry(.debug, "d\(chunk)\($0)", padding: 3997) })
        }
        await first.close()
        // The oldest debug chunk, the first an eviction takes records from, no longer decompresses.
        try await Self.tamper(path, "UPDATE chunk SET lines = randomblob(100) WHERE id = 1")

        let spool = try await Self.open(path, maximumBytes: 60 * recordSize)
        let crash = try await spool.append([entry(.crash, "c0", padding: 3998)])
        #expect(crash.accepted == 1 && crash.refused == 0)
        let errors = try await spool.append((10..<22).map { entry(.error, "e\($0)", padding: 3997) })
        #expect(errors.accepted == 12, "nine fit where the damaged chunk was; three more evict three debug records")
        let statistics = await spool.statistics()
        #expect(statistics.pending[.debug] == 47 && statistics.evicted == 3)
        #expect(statistics.quarantinedChunks == 1 && statistics.unreadableRecords == 10)
        #expect(try await Self.claimAll(spool, .debug).first == "d13")
        await spool.close()
    }

    /// Rows changed by hand: each would trap, stall the class or fail every append if taken at its word.
    enum Tampering: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case negativeSize = "a chunk with a negative size"
        case hugeSize = "a chunk with a size of a terabyte"
        case sizeNotANumber = "a chunk whose size is text"
        case hugeCount = "a chunk with a count near the largest integer"
        case negativeCount = "a chunk with a negative count"
        case sequenceOverflow = "a chunk whose first sequence overflows when its count is added"
        case overlappingSequences = "a chunk whose sequences overlap the chunk before it"
        case negativeSettledRun = "a settled run with a negative start and count"
        case settledRunOverflow = "a settled run whose end overflows"
        case overlappingSettledRuns = "settled runs that overlap"
        case largestChunkID = "a chunk whose id is the largest integer"
        case unknownClass = "a chunk of a class this build does not know, with the id the next chunk would get"
        case deadLetterLargestSequence = "a dead letter whose sequence is the largest integer"
        case deadLetterUnknownClass = "a dead letter of an unknown class whose reason and time are numbers"

        var testDescription: String { rawValue }

        var sql: String {
            switch self {
            case .negativeSize: "UPDATE chunk SET size = -5 WHERE id = 2"
            case .hugeSize: "UPDATE chunk SET size = 1099511627776 WHERE id = 2"
            case .sizeNotANumber: "UPDATE chunk SET size = 'many' WHERE id = 2"
            case .hugeCount: "UPDATE chunk SET count = 4611686018427387904 WHERE id = 2"
            case .negativeCount: "UPDATE chunk SET count = -3 WHERE id = 2"
            case .sequenceOverflow: "UPDATE chunk SET first_sequence = 9223372036854775800 WHERE id = 2"
            case .overlappingSequences: "UPDATE chunk SET first_sequence = 5 WHERE id = 2"
            case .negativeSettledRun: "INSERT INTO chunk_settled VALUES (2, -5, -3)"
            case .settledRunOverflow: "INSERT INTO chunk_settled VALUES (2, 9223372036854775807, 5)"
            case .overlappingSettledRuns: "INSERT INTO chunk_settled VALUES (2, 0, 5), (2, 3, 5)"
            case .largestChunkID: "UPDATE chunk SET id = 9223372036854775807 WHERE id = 2"
            case .unknownClass:
                "INSERT INTO chunk SELECT 4, 9, 1000, count, lines, compression, size, sender FROM chunk WHERE id = 2"
            case .deadLetterLargestSequence:
                """
                INSERT INTO dead_letter (record_id, priority, line, reason, failed_at)
                VALUES (9223372036854775807, 1, 'x', 'r', 't')
                """
            case .deadLetterUnknownClass:
                "INSERT INTO dead_letter (record_id, priority, line, reason, failed_at) VALUES (5, 99, X'00ff', 5, 6)"
            }
        }

        /// The info records claimed after the tampering.
        var claimed: [String] {
            let a = SpoolDamageTests.records("a"), b = SpoolDamageTests.records("b"), c = SpoolDamageTests.records("c")
            switch self {
            case .negativeSettledRun, .settledRunOverflow, .unknownClass, .deadLetterLargestSequence,
                .deadLetterUnknownClass:
                // Nothing of chunk 2 is lost or settled by a run that cannot be.
                return a + b + c
            case .overlappingSettledRuns:
                return a + ["b8", "b9"] + c
            case .negativeSize, .hugeSize, .sizeNotANumber, .hugeCount, .negativeCount, .sequenceOverflow,
                .overlappingSequences, .largestChunkID:
                return a + c
            }
        }
    }

    @Test("tampered rows are no trap: the spool opens, delivers what it can, and appends go on",
        arguments: Tampering.allCases)
    func tamperedRows(_ tampering: Tampering) async throws {
        let path = try await Self.threeChunks()
        try await Self.tamper(path, tampering.sql)

        let spool = try await Self.open(path)
        #expect(try await Self.claimAll(spool) == tampering.claimed)
        _ = try await spool.append([entry(.info, "d0"), entry(.error, "e0")])
        #expect(try await Self.claimAll(spool) == ["d0"])
        #expect(try await Self.claimAll(spool, .error) == ["e0"])
        _ = try await spool.deadLetters(limit: 100)
        _ = try await spool.requeueDeadLetters(.all)
        _ = try await Self.claimAll(spool)
        await spool.close()
        // And again after a restart: what was taken out stays out, the rest opens as it is.
        let reopened = try await Self.open(path)
        #expect(try await Self.claimAll(reopened).isEmpty)
        await reopened.close()
    }

    /// How a spool file is damaged beyond opening.
    enum FileDamage: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case randomBytes = "random bytes"
        case truncated = "a spool cut after its first page"
        case garbledHeader = "a spool whose header is overwritten"
        case schemaUnusable = "a database of this schema version without the spool's tables"

        var testDescription: String { rawValue }

        func apply(to path: String) async throws {
            switch self {
            case .randomBytes:
                var generator = SystemRandomNumberGenerator()
                try Data((0..<8192).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
                    .write(to: URL(fileURLWithPath: path))
            case .truncated, .garbledHeader:
                let spool = try await SQLiteSpool.open(
                    path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
                for chunk in 0..<20 {
                    _ = try await spool.append((0..<50).map { entry(.info, "\(chunk)-\($0)-\(UUID())", padding: 600) })
                }
                await spool.close()
                let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
                if self == .truncated {
                    try handle.truncate(atOffset: UInt64(SQLiteSpool.newFilePageSize))
                } else {
                    try handle.seek(toOffset: 0)
                    handle.write(Data(repeating: 0x5A, count: 100))
                }
                try handle.close()
            case .schemaUnusable:
                try await SpoolDamageTests.tamper(path, "CREATE TABLE other (x); PRAGMA user_version = 4")
            }
        }
    }

    static func inode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int
    }

    /// Files beside the spool that were set aside.
    static func setAside(beside path: String) throws -> [String] {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        return try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasPrefix("\(name).corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
            .map { "\(directory)/\($0)" }
    }

    @Test("a spool file that cannot be opened as a database is set aside with its bytes, and a fresh spool starts",
        arguments: FileDamage.allCases)
    func damagedFileSetAside(_ damage: FileDamage) async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        try await damage.apply(to: path)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        let inode = try Self.inode(path)

        let spool = try await Self.open(path)
        let aside = try Self.setAside(beside: path)
        #expect(aside.count == 1)
        if let file = aside.first {
            // SQLite may have changed what it could open (its WAL checkpointed into it, the file made a WAL
            // database) before the damage showed; a file it cannot read at all it leaves as it was.
            #expect(try Self.inode(file) == inode, "the same file, renamed")
            if damage == .randomBytes {
                #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == damaged, "the old bytes, untouched")
            }
            #expect(file.range(of: #"spool\.db\.corrupt-\d{8}T\d{6}Z$"#, options: .regularExpression) != nil)
        }
        _ = try await spool.append([entry(.crash, "after")])
        #expect(try await Self.claimAll(spool, .crash) == ["after"])
        await spool.close()
    }

    @Test("a spool of a newer schema is refused, not set aside")
    func newerSchemaRefused() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        try await Self.tamper(path, "PRAGMA user_version = \(SQLiteSpool.schemaVersion + 1)")
        await #expect { _ = try await Self.open(path) } throws: {
            "\($0)".contains("newer than this logshipd understands")
        }
        #expect(try Self.setAside(beside: path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test("a spool this process holds is refused as in use, not set aside")
    func inUseRefused() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let first = try await Self.open(path)
        await #expect(throws: SpoolError.inUse(path)) { _ = try await Self.open(path) }
        #expect(try Self.setAside(beside: path).isEmpty)
        await first.close()
    }

    @Test("a journal cursor whose time is the largest there is places the reader after the end, no trap")
    func cursorAtTheEndOfTime() async throws {
        let directory = try TemporaryDirectory.make()
        let entries = JournalFiles.entries(5, from: 1_795_255_200_000_000) { "e\($0)" }
        try await JournalFiles(directory: directory).append(entries)
        let placement = try await offloaded {
            let reader = try JournalReader(
                directory: directory, matches: [], start: .head,
                mapper: JournalRecordMapper(selection: .init(), hostname: "h", extraFields: [], maximumFieldBytes: 64))
            defer { reader.close() }
            let placement = try reader.position(savedCursor: "s=0;i=1;b=0;m=1;t=ffffffffffffffff;x=0")
            _ = try reader.read(limit: 10, waitingUpTo: .zero)
            return placement
        }
        #expect(placement == .cursorLost(realtime: .max))
    }
}

/// The real binaries and a spool file that is damaged or taken.
@Suite("Spool damage, end to end", .serialized)
struct SpoolDamageEndToEndTests {
    @Test("logshipd on a spool file of random bytes sets it aside, starts a fresh spool, delivers, and says so")
    func randomBytesSpool() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url)
        var generator = SystemRandomNumberGenerator()
        let garbage = Data((0..<16384).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        try garbage.write(to: URL(fileURLWithPath: "\(directory)/spool.db"))

        let daemon = try await LogshipdProcess.start(directory: directory)
        let aside = try SpoolDamageTests.setAside(beside: "\(directory)/spool.db")
        #expect(aside.count == 1)
        if let file = aside.first {
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == garbage)
        }
        let status = try await LogshipdProcess.status(directory: directory)
        #expect(status.spoolSetAside == aside.first && status.spoolSetAsideReason == "file is not a database")
        let table = try await run(Binaries.logctl, ["status", "--socket", "\(directory)/control.sock"])
        let line = "spool file    set aside as \(aside.first ?? "?") (file is not a database); "
            + "a fresh spool was started"
        #expect(table.standardOutput.contains(line), "\(table.standardOutput)")
        #expect(!table.standardOutput.contains("damaged "), "no quarantine, no line for it")
        let sent = try await run(Binaries.logctl, ["send", "--socket", "\(directory)/control.sock", "after the damage"])
        #expect(sent.status == 0, "\(sent.standardError)")
        try await receiver.waitFor(records: 1, within: .seconds(180))
        #expect(receiver.records.map(\.message) == ["after the damage"])
        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait()
        #expect(stopped.status == 0)
        #expect(stopped.standardError.contains("set aside"), "\(stopped.standardError)")
    }

    @Test("a spool held by another running logshipd is refused, and left where it is")
    func heldSpoolRefused() async throws {
        let receiver = try await TestReceiver()
        let first = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: first, url: receiver.url)
        let running = try await LogshipdProcess.start(directory: first)

        let second = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: second, url: receiver.url, spool: "\(first)/spool.db")
        let refused = try await run(Binaries.logshipd, ["--config", "\(second)/logshipd.yaml"])
        #expect(refused.status != 0)
        #expect(refused.standardError.contains("in use by another process"), "\(refused.standardError)")
        #expect(try SpoolDamageTests.setAside(beside: "\(first)/spool.db").isEmpty)
        #expect(try await LogshipdProcess.status(directory: first).spoolSetAside == nil)
        #expect(FileManager.default.fileExists(atPath: "\(first)/spool.db"))

        let sent = try await run(Binaries.logctl, ["send", "--socket", "\(first)/control.sock", "still here"])
        #expect(sent.status == 0)
        try await receiver.waitFor(records: 1, within: .seconds(180))
        running.signal(SIGTERM)
        #expect(try await running.wait().status == 0)
    }

    @Test("a daemon on a spool with a damaged chunk delivers the rest; status, logctl status and metrics count it")
    func daemonCountsQuarantine() async throws {
        let directory = try TemporaryDirectory.make()
        let spool = try await SQLiteSpool.open(
            path: "\(directory)/spool.db", maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        for letter in ["a", "b", "c"] {
            _ = try await spool.append((0..<10).map { index in
                SpoolEntry(LogRecord(
                    timestamp: .now(), priority: .warning, severity: .warning, host: "h", source: .control,
                    message: "\(letter)\(index) " + String(repeating: "x", count: 4000)))
            })
        }
        await spool.close()
        // The last chunk of the class: a count larger than its lines overlaps no other chunk's sequences.
        try await SpoolDamageTests.tamper("\(directory)/spool.db", "UPDATE chunk SET count = 12 WHERE id = 3")

        let receiver = try await TestReceiver()
        let daemon = try await TestDaemon.start(receiver: receiver, directory: directory) {
            $0.spool.path = "\(directory)/spool.db"
            $0.spool.minFreeDisk = 0
            $0.metrics.listen = "127.0.0.1:0"
        }
        try await receiver.waitFor(records: 20, within: .seconds(180))
        #expect(Set(receiver.records.map { String($0.message.prefix(1)) }) == ["a", "b"])
        try await eventually { try await daemon.status().quarantinedChunks == 1 }
        let status = try await daemon.status()
        #expect(status.quarantinedChunks == 1 && status.quarantinedRecords == 12 && status.unreadableRecords == 2)
        #expect(status.deadLetters == 10 && status.spoolSetAside == nil)

        let table = try await run(Binaries.logctl, ["status", "--socket", daemon.controlPath])
        #expect(
            table.standardOutput.contains(
                "damaged       1 spool chunk(s) quarantined: 10 record(s) to dead letters, 2 unreadable"),
            "\(table.standardOutput)")
        #expect(!table.standardOutput.contains("spool file "))

        let port = try #require(daemon.daemon.metricsAddress?.port)
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let response = try await client.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        try await client.shutdown()
        let samples = try MetricsTests.samples(String(buffer: body))
        #expect(samples["logshipd_spool_chunks_quarantined_total"] == 1)
        #expect(samples["logshipd_records_quarantined_total"] == 12)
        #expect(samples["logshipd_records_unreadable_total"] == 2)
        #expect(samples["logshipd_spool_set_aside"] == 0)
        try await daemon.stop()
    }
}
