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
public final class SQLiteSpool: Spool, DeadLetterStore {
    /// Records queued for a commit before fire-and-forget callers wait: a `kill -9` loses at most these plus one
    /// read of a connection (``FrameBatcher/maximumFrames``), and the commit being written.
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
    let minimumFreeDiskBytes: Int
    /// SQLite's page size for this file, fixed once the file exists.
    let pageSize: Int
    let logger: Logger
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
        path: String, database: DatabasePool, lock: SpoolLock, maximumBytes: Int, minimumFreeDiskBytes: Int,
        pageSize: Int, logger: Logger, ledger: SpoolLedger, writerExecutor: SerialQueueTaskExecutor
    ) {
        self.path = path
        self.database = database
        self.lock = lock
        self.maximumBytes = maximumBytes
        self.minimumFreeDiskBytes = minimumFreeDiskBytes
        self.pageSize = pageSize
        self.logger = logger
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
                logger.reportRefused(outcome.receipts.reduce(0) { $0 + $1.refused })
                return outcome.receipts
            },
            reportFailure: { error, _ in
                logger.error("records from the ingest sockets were not stored", metadata: ["logship.error": "\(error)"])
            })
        // Nothing waits for room: what is queued is bounded by what is claimed. With one record per request, an
        // acknowledgement arrives every few hundred microseconds: a commit each cost more than the requests.
        acknowledgements = CommitQueue(
            capacity: .max,
            linger: Self.acknowledgementLinger,
            weight: { $0.records.count },
            executor: writerExecutor,
            commit: { batches in
                try await owner.spool().delete(batches)
                return batches.map { _ in () }
            },
            reportFailure: { error, batches in
                try? owner.spool().acknowledgementsFailed(batches)
                availability.announceFailedAcknowledgements(Set(batches.map(\.priority)), reason: "\(error)")
                logger.error(
                    "delivered records could not be deleted from the spool; they are pending again and will be sent again",
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
    func settlingWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try checkOpen()
        // SQLite's errors become SpoolError; any other is the body's own (a SpoolError, an unknown dead letter)
        // and passes as it is.
        do {
            return try await database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
                return try body(db)
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw SpoolError.diskFull
        } catch let error as DatabaseError {
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
        ledger.withLock { $0.statistics() }
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
