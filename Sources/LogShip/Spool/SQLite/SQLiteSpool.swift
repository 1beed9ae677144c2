import Foundation
import GRDB
import Logging
import Synchronization

/// The durable spool: records in a SQLite database (WAL mode) through GRDB, committed in group commits.
///
/// - Records are stored in chunks: one row holds a run of records of one class, their NDJSON lines in one blob,
///   so that a commit of hundreds of lines writes a row, not hundreds. A record is a chunk and an index; its
///   sequence orders it within its class. Delivered records of a chunk still holding others are listed as
///   settled runs; a chunk whose records are all settled is deleted.
/// - What the spool holds is known in memory (``SpoolLedger``): every decision is the ledger's, taken under its
///   lock, and the spool carries out the writes it returns. Claims, unclaims and counts touch no disk, and a claim
///   reads a chunk from the database only when its lines are not kept in memory. After a crash or `kill -9` every
///   stored record is unclaimed and ready again at the next start (at-least-once delivery).
/// - Every write runs on GRDB's writer queue, never on Swift's cooperative pool, and decides under the ledger's
///   lock when it starts, so decisions are taken in the order transactions are written.
/// - Start-up reads each chunk's place and size, not its lines; a row whose numbers cannot be true is quarantined
///   then, one whose lines turn out damaged when they are read.
/// - Appends go through a ``CommitQueue``: many records per transaction, each transaction synced to disk.
///   Acknowledgements go through another: the deletes of every batch delivered meanwhile in one transaction.
/// - Room is the smaller of what the budget and what the disk allow (``SpoolDisk``). Records that find none are
///   refused with the reason, or, from the ingest sockets, wait in the commit queue until a settlement makes
///   some, their connection not read meanwhile; nothing is stored only to be the one evicted.
public final class SQLiteSpool: Spool, DeadLetterStore {
    /// Records queued for a commit before fire-and-forget callers wait: a `kill -9` loses at most these plus one
    /// read of a connection (``FrameBatcher/maximumFrames``), and the commit being written; while records wait
    /// for room, as many again, and one read of each connection held until its records are stored.
    public static let commitQueueCapacity = 1024
    /// How long acknowledgements wait to be committed together: the records stay claimed meanwhile, and a
    /// `kill -9` in that time sends them again.
    static let acknowledgementLinger = Duration.milliseconds(5)
    /// `spool.max_cache_bytes` when the configuration does not set it: what delivery claims from memory rather
    /// than reads back (``SpoolLedger/CacheBudget``). BENCHMARKS.md's Delivery cache section weighs it against
    /// 1 and 16 MiB.
    public static let defaultCacheBytes = 4 << 20

    public let path: String
    public let availability = Availability()
    let database: DatabasePool
    let lock: SpoolLock
    let maximumBytes: Int
    let disk: SpoolDisk
    /// SQLite's page size for this file, fixed once the file exists.
    let pageSize: Int
    /// What the WAL's file keeps between checkpoints (`journal_size_limit`).
    let walFileBytes: Int
    let logger: Logger
    let reports: SpoolRoomReports
    let ledger: Mutex<SpoolLedger>
    /// Chunks whose lines a background read is fetching.
    let prefetching = Mutex<Set<Int64>>([])
    /// Where the group commits' tasks run: the serial queue the writer connection's queue targets.
    let writerExecutor: SerialQueueTaskExecutor
    let commits: CommitQueue<SpoolAppend, AppendReceipt>
    let acknowledgements: CommitQueue<Batch, Void>

    /// Bytes of lines held in memory now.
    var cachedLineBytes: Int { ledger.withLock { $0.cachedBytes } }

    init(
        path: String, database: DatabasePool, lock: SpoolLock, maximumBytes: Int, disk: SpoolDisk,
        pageSize: Int, walFileBytes: Int, logger: Logger, ledger: SpoolLedger, writerExecutor: SerialQueueTaskExecutor
    ) {
        self.path = path
        self.database = database
        self.lock = lock
        self.maximumBytes = maximumBytes
        self.disk = disk
        self.pageSize = pageSize
        self.walFileBytes = walFileBytes
        self.logger = logger
        let reports = SpoolRoomReports(logger: logger)
        self.reports = reports
        self.ledger = Mutex(ledger)
        self.writerExecutor = writerExecutor
        // The queues' work calls back into the spool, which does not exist yet; weak, so that neither keeps the
        // other alive.
        let owner = Owner()
        let availability = self.availability
        commits = CommitQueue(
            capacity: Self.commitQueueCapacity,
            weight: { $0.entries.count },
            executor: writerExecutor,
            commit: { groups in
                let outcome = try await owner.spool().commit(groups)
                availability.announce(outcome.classes)
                reports.note(outcome.room)
                return .init(receipts: outcome.receipts, waiting: outcome.waiting)
            },
            reportFailure: { error, groups in
                let count = groups.reduce(0) { $0 + $1.entries.count }
                guard error as? SpoolError == .closed else {
                    logger.error(
                        "records from the ingest sockets were not stored",
                        metadata: ["logship.error": "\(error)", "logship.spool.lost": "\(count)"])
                    return
                }
                try? owner.spool().ledger.withLock { $0.refused += count }
                logger.error(
                    "records from the ingest sockets still waited for room in the spool when it closed; they are lost",
                    metadata: ["logship.spool.lost": "\(count)"])
            })
        // Nothing waits for room: what is queued is bounded by what is claimed. With one record per request, an
        // acknowledgement arrives every few hundred microseconds: a commit each cost more than the requests.
        acknowledgements = CommitQueue(
            capacity: .max,
            linger: Self.acknowledgementLinger,
            weight: { $0.records.count },
            executor: writerExecutor,
            commitAll: { batches in
                try await owner.spool().delete(batches)
                return batches.map { _ in () }
            },
            reportFailure: { error, batches in
                try? owner.spool().acknowledgementsFailed(batches)
                availability.announceFailedAcknowledgements(Set(batches.map(\.priority)), reason: "\(error)")
                logger.error(
                    """
                    delivered records could not be deleted from the spool; \
                    they are pending again and will be sent again
                    """,
                    metadata: [
                        "logship.error": "\(error)",
                        "logship.batch.records": "\(batches.reduce(0) { $0 + $1.records.count })",
                    ])
            })
        owner.set(self)
    }

    /// The spool a commit queue works for.
    private final class Owner: Sendable {
        private struct Reference { weak var spool: SQLiteSpool? }
        private let reference = Mutex(Reference())

        func set(_ spool: SQLiteSpool) { reference.withLock { $0.spool = spool } }

        /// - Throws: ``SpoolError/closed`` once the spool is gone.
        func spool() throws -> SQLiteSpool {
            guard let spool = reference.withLock({ $0.spool }) else { throw SpoolError.closed }
            return spool
        }
    }

    /// Runs a settling write (acknowledge, dead letter, requeue, purge, quarantine), mapping SQLite's errors to
    /// ``SpoolError``.
    ///
    /// With `synchronous = NORMAL`: the commit reaches the WAL in the page cache, which outlives a crash or
    /// `kill -9` of logshipd, but is not flushed to the disk until the next append's commit (FULL) or checkpoint.
    /// A power loss can undo the last settlements: their records are delivered again, never lost. Waiting for
    /// the disk on every acknowledgement is what held one-record requests to the disk's flush rate.
    ///
    /// A settlement frees room: what waits for room in the commit queue is tried again once it is written.
    func settlingWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try checkOpen()
        // SQLite's errors become SpoolError; any other is the body's own (a SpoolError, an unknown dead letter)
        // and passes as it is.
        do {
            let result = try await writeMakingRoom { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
                return try body(db)
            }
            commits.roomMayHaveChanged()
            return result
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw SpoolError.diskFull(path)
        } catch let error as DatabaseError {
            throw SpoolError.storage("\(error)")
        }
    }

    /// Runs `body` on the writer; should the disk be full, makes what room the spool can and runs it once more.
    /// Every write that can grow the files goes through here: deleting records writes the WAL too.
    ///
    /// The room: the reserve (``SpoolDisk``), and the WAL's own file. A checkpoint that copies every frame back
    /// lets the next transaction write the WAL from its beginning, in space its file already holds; the pages
    /// that evicted records free inside the database take the new records.
    func writeMakingRoom<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let disk = disk
        // In the same trip to the writer as `body`: while the disk is short, what a commit added to the WAL is
        // copied into the database at once (a checkpoint needs room for the pages that extend the file, and the
        // room there is now may be gone later), and the reserve is made again once there is room (allocating it
        // is blocking I/O, which the writer's thread may do).
        let write: @Sendable (Database) throws -> T = { db in
            let result = try body(db)
            if !disk.holdsReserve {
                _ = try? db.checkpoint(.passive)
                disk.reserveIfRoom()
            }
            return result
        }
        do {
            return try await database.writeWithoutTransaction(write)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            disk.releaseReserve()
            _ = try? await database.writeWithoutTransaction { db in try db.checkpoint(.restart) }
            return try await database.writeWithoutTransaction(write)
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

    /// - Throws: ``SpoolError/closed`` once the spool is closed.
    func checkOpen() throws {
        if ledger.withLock({ $0.isClosed }) { throw SpoolError.closed }
    }

    // MARK: Status and shutdown

    public func arrivalMark() async throws -> ArrivalMark {
        try checkOpen()
        return ledger.withLock { $0.arrivalMark() }
    }

    public func heldRecords(upTo mark: ArrivalMark, in classes: Set<PriorityClass>) async throws -> Int {
        try checkOpen()
        return ledger.withLock { $0.heldRecords(upTo: mark, in: classes) }
    }

    public func statistics() async -> SpoolStatistics {
        var statistics = ledger.withLock { $0.statistics() }
        statistics.waitingForRoom = commits.waitingWeight
        if let sample = disk.sample() {
            statistics.disk = SpoolDiskStatus(
                free: sample.free, size: sample.size, minimumFree: disk.minimumFree,
                configuredMinimumFree: disk.configuredMinimumFree, reserve: disk.holdsReserve ? disk.reserveBytes : 0)
        }
        return statistics
    }

    public func close() async {
        await commits.close()
        await acknowledgements.close()
        availability.finish()
        ledger.withLock { $0.isClosed = true }
        try? database.close()
        lock.unlock()
    }
}
