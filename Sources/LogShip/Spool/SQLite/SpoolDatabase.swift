import Foundation
import GRDB
import Logging
import Synchronization

/// The SQL behind ``SQLiteSpool``: it carries out what its ``SpoolLedger`` decides.
///
/// Every write runs on GRDB's writer queue and decides under the ledger's lock when it starts, so decisions are
/// taken in the order transactions are written. Claims, releases and counts need no database access: they are
/// the ledger's alone, and a claim reads from the database only the lines of a chunk that are not in memory.
final class SpoolDatabase: Sendable {
    struct CommitOutcome: Sendable {
        var receipts: [AppendReceipt]
        var classes: Set<PriorityClass>
    }

    /// How long claims wait after acknowledgements failed to commit (their records are pending again).
    static let claimPauseAfterFailedAcknowledgement: TimeInterval = 5
    /// Lines kept in memory beyond the chunks delivery is working on and each class's newest chunk. The batched
    /// comparison spends 15% less CPU per line with 16 MiB than with 1 MiB while delivering (it reads back fewer
    /// chunks); with the remote down, 1 MiB keeps the spool's memory flat however long the backlog grows.
    static let cacheBudget = SpoolLedger.CacheBudget(delivering: 16 << 20, stalled: 1 << 20)
    /// SQLite's page size for a new spool file (an existing file keeps its own). Chunk blobs fill overflow pages,
    /// and SQLite writes each WAL frame, and copies it at a checkpoint, with a system call of its own: 4 KiB pages
    /// cost an intake of 220 000 socket lines about 49 000 `pwrite`s and 16 000 `pread`s. With 32 KiB pages,
    /// intake alone and the batched comparison were 13–17% faster (medians of alternated runs); one record per
    /// request about 6% slower, each acknowledgement rewriting larger pages; 16 and 64 KiB gained less.
    static let newFilePageSize = 32 << 10

    let path: String
    let database: DatabasePool
    private let lock: SpoolLock
    let maximumBytes: Int
    let minimumFreeDiskBytes: Int
    /// SQLite's page size for this file, fixed once the file exists.
    let pageSize: Int
    let logger: Logger
    let ledger: Mutex<SpoolLedger>
    /// Chunks whose lines a background read is fetching.
    let prefetching = Mutex<Set<Int64>>([])
    /// Where the group commits' tasks run: the serial queue the writer connection's queue targets.
    let writerExecutor: SerialQueueTaskExecutor

    /// Opens the spool file at `path`, or, should it be damaged beyond opening (``SpoolFileDamage``), sets it
    /// aside (``SpoolSetAside``) and starts a fresh one in its place.
    ///
    /// - Throws: ``SpoolError`` when another process holds the spool, or the file cannot be opened for a reason
    ///   other than damage (permissions, a full disk, a newer schema), or a fresh file cannot either.
    static func open(
        path: String, maximumBytes: Int, minimumFreeDiskBytes: Int, cacheBudget: SpoolLedger.CacheBudget,
        logger: Logger
    ) async throws -> SpoolDatabase {
        let lock = try SpoolLock(databasePath: path)
        func open(setAside: SpoolSetAside?) async throws -> SpoolDatabase {
            try await Self.open(
                path: path, lock: lock, maximumBytes: maximumBytes, minimumFreeDiskBytes: minimumFreeDiskBytes,
                cacheBudget: cacheBudget, setAside: setAside, logger: logger)
        }
        do {
            do {
                return try await open(setAside: nil)
            } catch let damage as SpoolFileDamage {
                let setAside = try SpoolSetAside.moveAside(path, reason: damage.reason)
                logger.warning(
                    "the spool file cannot be opened as a database; it was set aside and a fresh spool started",
                    metadata: [
                        "logship.spool.path": "\(path)", "logship.spool.set_aside": "\(setAside.path)",
                        "logship.spool.damage": "\(damage.reason)",
                    ])
                return try await open(setAside: setAside)
            }
        } catch {
            lock.release()
            throw SpoolError.storage("cannot open \(path): \(error)")
        }
    }

    /// Opens the file under `lock`.
    ///
    /// - Throws: ``SpoolFileDamage`` when the file is damaged, with every connection to it closed; other errors
    ///   as they come.
    private static func open(
        path: String, lock: SpoolLock, maximumBytes: Int, minimumFreeDiskBytes: Int,
        cacheBudget: SpoolLedger.CacheBudget, setAside: SpoolSetAside?, logger: Logger
    ) async throws -> SpoolDatabase {
        var configuration = Configuration()
        configuration.label = "logshipd.spool"
        // Reads are rare (chunks whose lines are not kept, status, dead letters): two connections suffice.
        configuration.maximumReaderCount = 2
        // The writer's queue runs on this one, so that the tasks committing groups run in turn with their
        // writes (SerialQueueTaskExecutor). Only the writer: the readers keep their own queues.
        let writerExecutor = SerialQueueTaskExecutor(DispatchQueue(label: "logshipd.spool.writer"))
        configuration.writeTargetQueue = writerExecutor.queue
        // Checkpoint the WAL before it outgrows half the free-space margin (up to 32 MiB: a
        // chunk is often delivered and deleted before the checkpoint, and a longer WAL copies fewer of them
        // into the database file; 1 000 pages cost the batched comparison a fifth more CPU per line), and
        // shrink it back after.
        let walLimit = max(minimumFreeDiskBytes / 2, 64 << 10)
        configuration.prepareDatabase { db in
            // Before anything is written: no effect on a file that already has pages.
            try db.execute(sql: "PRAGMA page_size = \(Self.newFilePageSize)")
            // Chunks are written once and read once, in overflow pages streamed through: a page cache larger
            // than the b-tree's inner pages holds nothing worth keeping (SQLite's default is 2 MiB a connection).
            try db.execute(sql: "PRAGMA cache_size = -512")
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(max(16, min(8000, walLimit / pageSize)))")
            try db.execute(sql: "PRAGMA journal_size_limit = \(walLimit)")
        }
        let database: DatabasePool
        do {
            database = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw SpoolFileDamage.shown(by: error, readingSchema: false) ?? error
        }
        do {
            // FULL: a commit is on disk when it returns, which is what `logctl send` is told. Set here, not in
            // `prepareDatabase`: the pool switches its writer to WAL after preparing it, and sets NORMAL then.
            try await database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            var ledger = try await database.write { db in
                do {
                    try Self.migrate(db)
                    return try Self.loadLedger(db, cacheBudget: cacheBudget, logger: logger)
                } catch {
                    throw SpoolFileDamage.shown(by: error, readingSchema: true) ?? error
                }
            }
            ledger.setAside = setAside
            let pageSize = try await database.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096 }
            return SpoolDatabase(
                path: path, database: database, lock: lock, maximumBytes: maximumBytes,
                minimumFreeDiskBytes: minimumFreeDiskBytes, pageSize: pageSize, logger: logger, ledger: ledger,
                writerExecutor: writerExecutor)
        } catch {
            // Closed before the caller renames the file or gives up on it.
            try? database.close()
            throw SpoolFileDamage.shown(by: error, readingSchema: false) ?? error
        }
    }

    private init(
        path: String, database: DatabasePool, lock: SpoolLock, maximumBytes: Int, minimumFreeDiskBytes: Int,
        pageSize: Int, logger: Logger, ledger: SpoolLedger, writerExecutor: SerialQueueTaskExecutor
    ) {
        self.writerExecutor = writerExecutor
        self.path = path
        self.database = database
        self.lock = lock
        self.maximumBytes = maximumBytes
        self.minimumFreeDiskBytes = minimumFreeDiskBytes
        self.pageSize = pageSize
        self.logger = logger
        self.ledger = Mutex(ledger)
    }

    /// Runs a settling write (acknowledge, dead letter, requeue, purge), mapping SQLite errors.
    ///
    /// With `synchronous = NORMAL`: the commit reaches the WAL in the page cache, which outlives a crash or
    /// `kill -9` of logshipd, but is not flushed to the disk until the next append's commit (FULL) or checkpoint.
    /// A power loss can undo the last settlements: their records are delivered again, never lost. Waiting for
    /// the disk on every acknowledgement is what held one-record requests to the disk's flush rate.
    func settlingWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try checkOpen()
        do {
            return try await database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
                return try body(db)
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw SpoolError.diskFull
        } catch {
            throw SpoolError.storage("\(error)")
        }
    }

    /// Writes `writes` in a transaction with `more`; once committed the ledger applies them, and should the
    /// transaction fail, `changes` are reverted. Runs on the writer queue.
    func commit(_ writes: ChunkWrites, reverting changes: [SpoolLedger.Change], _ db: Database,
                more: (Database) throws -> Void = { _ in }) throws {
        do {
            try db.inTransaction {
                try Self.execute(writes, db)
                try more(db)
                return .commit
            }
        } catch {
            ledger.withLock { $0.revert(changes) }
            throw error
        }
        ledger.withLock { $0.apply(writes) }
    }

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

    // MARK: Status and shutdown

    func statistics() -> SpoolStatistics {
        ledger.withLock { $0.statistics() }
    }

    func pendingClasses() -> Set<PriorityClass> {
        ledger.withLock { $0.pendingClasses() }
    }

    func close() {
        ledger.withLock { $0.isClosed = true }
        try? database.close()
        lock.release()
    }

    func checkOpen() throws {
        if ledger.withLock({ $0.isClosed }) { throw SpoolError.closed }
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
