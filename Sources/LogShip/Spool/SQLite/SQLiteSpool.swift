import Foundation
import Logging
import Synchronization

/// The durable spool: records in a SQLite database (WAL mode) through GRDB, committed in group commits.
///
/// - Records are stored in chunks: one row holds a run of records of one class, their NDJSON lines in one blob,
///   so that a commit of hundreds of lines writes a row, not hundreds. A record is a chunk and an index; its
///   sequence orders it within its class. Delivered records of a chunk still holding others are listed as
///   settled runs; a chunk whose records are all settled is deleted.
/// - What the spool holds is known in memory (``SpoolLedger``): claims, releases and counts touch no disk, and
///   a claim reads a chunk from the database only when its lines are not kept in memory. After a crash or
///   `kill -9` every stored record is unclaimed and ready again at the next start (at-least-once delivery).
/// - Every write runs on GRDB's writer queue, never on Swift's cooperative pool.
/// - Start-up reads each chunk's place and size, not its lines; a row whose numbers cannot be true is quarantined
///   then, one whose lines turn out damaged when they are read.
/// - Appends go through a ``CommitQueue``: many records per transaction, each transaction synced to disk.
///   Acknowledgements go through another: the deletes of every batch acknowledged meanwhile in one transaction.
public final class SQLiteSpool: Spool {
    /// Records queued for a commit before fire-and-forget callers wait: a `kill -9` loses at most these plus one
    /// read of a connection (``FrameBatcher/maximumFrames``), and the commit being written.
    public static let commitQueueCapacity = 1024
    /// How long acknowledgements wait to be committed together: the records stay claimed meanwhile, and a
    /// `kill -9` in that time sends them again.
    static let acknowledgementLinger = Duration.milliseconds(5)

    public let path: String
    public let availability = Availability()
    private let store: SpoolDatabase
    private let commits: CommitQueue<SpoolAppend, AppendReceipt>
    private let acknowledgements: CommitQueue<Batch, Void>

    /// Opens (or creates) the spool at `path`, creating its directory. A file that cannot be opened as a database
    /// is set aside as `<path>.corrupt-<UTC time>` and a fresh spool started (``SpoolStatistics/setAside``); a
    /// damaged chunk found later is quarantined, its readable records made dead letters.
    ///
    /// - Throws: ``SpoolError`` when another process holds the spool, or the file cannot be opened or migrated for
    ///   a reason other than damage (permissions, a full disk, a schema newer than this build's).
    /// - Parameters:
    ///   - maximumBytes: The budget for stored records (`spool.max_bytes`).
    ///   - minimumFreeDiskBytes: Disk space the spool leaves free (`spool.min_free_disk`): room for the WAL and
    ///     for the deletes that settle deliveries, which need disk space too.
    public static func open(
        path: String, maximumBytes: Int, minimumFreeDiskBytes: Int, logger: Logger
    ) async throws -> SQLiteSpool {
        try await open(
            path: path, maximumBytes: maximumBytes, minimumFreeDiskBytes: minimumFreeDiskBytes,
            cacheBudget: SpoolDatabase.cacheBudget, logger: logger)
    }

    /// - Parameter cacheBudget: Bytes of lines kept in memory beyond the chunks delivery works on (tests make it
    ///   small to have chunks read back).
    static func open(
        path: String, maximumBytes: Int, minimumFreeDiskBytes: Int, cacheBudget: SpoolLedger.CacheBudget,
        logger: Logger
    ) async throws -> SQLiteSpool {
        let store = try await SpoolDatabase.open(
            path: path, maximumBytes: maximumBytes, minimumFreeDiskBytes: minimumFreeDiskBytes, cacheBudget: cacheBudget,
            logger: logger)
        return SQLiteSpool(path: path, store: store, logger: logger)
    }

    /// Bytes of lines held in memory now.
    var cachedLineBytes: Int { store.ledger.withLock { $0.cachedBytes } }

    private init(path: String, store: SpoolDatabase, logger: Logger) {
        self.path = path
        self.store = store
        let availability = self.availability
        commits = CommitQueue(
            capacity: Self.commitQueueCapacity,
            weight: { $0.entries.count },
            executor: store.writerExecutor,
            commit: { groups in
                let outcome = try await store.commit(groups)
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
            executor: store.writerExecutor,
            commit: { batches in
                try await store.acknowledge(batches)
                return batches.map { _ in () }
            },
            reportFailure: { error, batches in
                store.acknowledgementsFailed(batches)
                availability.announce(Set(batches.map(\.priority)))
                logger.error(
                    "delivered records could not be deleted from the spool; they are pending again and will be sent again",
                    metadata: [
                        "logship.error": "\(error)",
                        "logship.batch.records": "\(batches.reduce(0) { $0 + $1.records.count })",
                    ])
            })
    }

    public func append(_ entries: [SpoolEntry], position: InputPosition?, evicting: Bool) async throws -> AppendReceipt {
        try await commits.append(SpoolAppend(entries: entries, position: position, evicting: evicting))
    }

    public func savedPosition(of input: String) async throws -> String? {
        try await store.savedPosition(of: input)
    }

    public func enqueue(_ entries: [SpoolEntry]) async throws {
        try await commits.enqueue(SpoolAppend(entries: entries, position: nil))
    }

    public func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        try await store.claim(priority, limits: limits)
    }

    public func acknowledge(_ batch: Batch) async throws {
        try await acknowledgements.append(batch)
    }

    public func acknowledgeInBackground(_ batch: Batch) async throws {
        try await acknowledgements.enqueue(batch)
    }

    public func release(_ batch: Batch, retryAt: Date) async throws {
        try store.release(batch, retryAt: retryAt)
    }

    public func deadLetter(_ batch: Batch, failure: DeliveryFailure) async throws {
        try await store.deadLetter(batch, failure: failure)
    }

    public func oldestTimestamps() async throws -> [PriorityClass: Timestamp] {
        try await store.oldestTimestamps()
    }

    public func arrivalMark() async throws -> ArrivalMark {
        try store.arrivalMark()
    }

    public func heldRecords(upTo mark: ArrivalMark, in classes: Set<PriorityClass>) async throws -> Int {
        try store.heldRecords(upTo: mark, in: classes)
    }

    public func returnToPending(_ batch: Batch) async {
        store.returnToPending(batch)
    }

    public func pendingClasses() async throws -> Set<PriorityClass> {
        store.pendingClasses()
    }

    public func deadLetters(limit: Int) async throws -> [DeadLetter] {
        try await store.deadLetters(limit: limit)
    }

    public func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let (count, classes) = try await store.requeueDeadLetters(selection)
        if !classes.isEmpty { availability.announce(classes) }
        return count
    }

    public func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        try await store.purgeDeadLetters(selection)
    }

    public func statistics() async -> SpoolStatistics {
        store.statistics()
    }

    public func close() async {
        await commits.close()
        await acknowledgements.close()
        availability.finish()
        store.close()
    }
}
