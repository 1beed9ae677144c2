import Foundation
import GRDB
import Logging

extension SQLiteSpool {
    /// SQLite's page size for a new spool file (an existing file keeps its own). Chunk blobs fill overflow pages,
    /// and SQLite writes each WAL frame, and copies it at a checkpoint, with a system call of its own: larger pages
    /// make fewer calls, at the price of larger rewrites for each acknowledgement (BENCHMARKS.md, Measured
    /// choices).
    static let newFilePageSize = 32 << 10

    /// Opens (or creates) the spool at `path`, creating its directory. A file that cannot be opened as a database
    /// is set aside as `<path>.corrupt-<UTC time>` and a fresh spool started (``SpoolStatistics/setAside``); a
    /// damaged chunk found later is quarantined, its readable records made dead letters.
    ///
    /// - Throws: ``SpoolError`` when another process holds the spool, or the file cannot be opened or migrated for
    ///   a reason other than damage (permissions, a full disk, a schema newer than this build's).
    /// - Parameters:
    ///   - maximumBytes: The budget for stored records (`spool.max_bytes`).
    ///   - minimumFreeDiskBytes: Disk space the spool leaves free (`spool.min_free_disk`): room for the WAL and
    ///     for the deletes that settle deliveries, which need disk space too. On a filesystem too small for it
    ///     the spool leaves less, and says so (``SpoolDisk``).
    ///   - cacheBytes: Lines kept in memory for delivery to claim without reading them back
    ///     (`spool.max_cache_bytes`, see ``SpoolLedger/CacheBudget``).
    public static func open(
        path: String, maximumBytes: Int, minimumFreeDiskBytes: Int, cacheBytes: Int = defaultCacheBytes,
        logger: Logger
    ) async throws -> SQLiteSpool {
        try await open(
            path: path, maximumBytes: maximumBytes, minimumFreeDiskBytes: minimumFreeDiskBytes,
            cacheBudget: SpoolLedger.CacheBudget(bytes: cacheBytes), logger: logger)
    }

    /// Opens the spool file at `path`, or, should it be damaged beyond opening (``SpoolFileDamage``), sets it
    /// aside (``SpoolSetAside``) and starts a fresh one in its place.
    ///
    /// - Parameter cacheBudget: Bytes of lines kept in memory beyond the chunks delivery works on (tests make it
    ///   small to have chunks read back).
    /// - Throws: ``SpoolError`` when another process holds the spool, or the file cannot be opened for a reason
    ///   other than damage (permissions, a full disk, a newer schema), or a fresh file cannot either.
    static func open(
        path: String, maximumBytes: Int, minimumFreeDiskBytes: Int, cacheBudget: SpoolLedger.CacheBudget,
        logger: Logger
    ) async throws -> SQLiteSpool {
        let lock = try SpoolLock(databasePath: path)
        let disk = SpoolDisk(spoolPath: path, configuredMinimumFree: minimumFreeDiskBytes, logger: logger)
        func open(setAside: SpoolSetAside?) async throws -> SQLiteSpool {
            try await Self.open(
                path: path, lock: lock, maximumBytes: maximumBytes, disk: disk, cacheBudget: cacheBudget,
                setAside: setAside, logger: logger)
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
            lock.unlock()
            throw SpoolError.storage("cannot open \(path): \(error)")
        }
    }

    /// Opens the file under `lock`.
    ///
    /// - Throws: ``SpoolFileDamage`` when the file is damaged, with every connection to it closed; other errors
    ///   as they come.
    private static func open(
        path: String, lock: SpoolLock, maximumBytes: Int, disk: SpoolDisk, cacheBudget: SpoolLedger.CacheBudget,
        setAside: SpoolSetAside?, logger: Logger
    ) async throws -> SQLiteSpool {
        var configuration = Configuration()
        configuration.label = "logshipd.spool"
        // Reads are rare (chunks whose lines are not kept, status, dead letters): two connections suffice.
        configuration.maximumReaderCount = 2
        // The writer's queue runs on this one, so that the tasks committing groups run in turn with their
        // writes (SerialQueueTaskExecutor). Only the writer: the readers keep their own queues.
        let writerExecutor = SerialQueueTaskExecutor(DispatchQueue(label: "logshipd.spool.writer"))
        configuration.writeTargetQueue = writerExecutor.queue
        configuration.prepareDatabase { db in
            // Before anything is written: no effect on a file that already has pages.
            try db.execute(sql: "PRAGMA page_size = \(Self.newFilePageSize)")
            // Chunks are written once and read once, in overflow pages streamed through: a page cache larger
            // than the b-tree's inner pages holds nothing worth keeping (SQLite's default is 2 MiB a connection).
            // SQLite takes a connection's cache in one allocation at its first read, so its size is resident per
            // connection used: 256 KiB (8 pages) held less than 512 at no cost measured (BENCHMARKS.md, Measured
            // choices).
            try db.execute(sql: "PRAGMA cache_size = -256")
            // Debian builds SQLite with secure_delete on: every page a delete frees is written again, zeroed, so
            // deleting a delivered chunk wrote all its pages to the WAL once more, and on a full disk evicting
            // records for a crash record needed as much WAL as it freed. FAST clears deleted content only in
            // pages written anyway; freed pages keep theirs until reused, inside a file only logshipd may read.
            try db.execute(sql: "PRAGMA secure_delete = FAST")
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            let checkpointPages = Self.checkpointPages(minimumFree: disk.minimumFree, pageSize: pageSize)
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(checkpointPages)")
            // The WAL keeps the size it takes between checkpoints: on a full disk, the writes that evict records
            // for new ones go in space the spool already has (``SQLiteSpool/writeMakingRoom(_:)``).
            try db.execute(sql: "PRAGMA journal_size_limit = \(checkpointPages * pageSize)")
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
            let walFileBytes = checkpointPages(minimumFree: disk.minimumFree, pageSize: pageSize) * pageSize
            return SQLiteSpool(
                path: path, database: database, lock: lock, maximumBytes: maximumBytes, disk: disk,
                pageSize: pageSize, walFileBytes: walFileBytes, logger: logger, ledger: ledger,
                writerExecutor: writerExecutor)
        } catch {
            // Closed before the caller renames the file or gives up on it.
            try? database.close()
            throw SpoolFileDamage.shown(by: error, readingSchema: false) ?? error
        }
    }

    /// The WAL pages after which a commit checkpoints: before the WAL outgrows half of what the spool leaves free
    /// (32 MiB at the default `spool.min_free_disk`: a chunk is often delivered and deleted before the checkpoint,
    /// and a longer WAL copies fewer of them into the database file; BENCHMARKS.md, Measured choices).
    static func checkpointPages(minimumFree: Int, pageSize: Int) -> Int {
        max(16, min(8000, max(minimumFree / 2, 64 << 10) / pageSize))
    }
}
