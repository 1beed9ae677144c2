import Foundation
import GRDB
import Logging
import Synchronization

/// The SQL behind ``SQLiteSpool``, with the counts it keeps in memory.
final class SpoolDatabase: Sendable {
    struct State {
        /// Claimed records: class and accounted size.
        var claimed: [Int64: (priority: PriorityClass, bytes: Int)] = [:]
        /// Stored records per class, claimed ones included.
        var stored = [Int](repeating: 0, count: PriorityClass.allCases.count)
        var bytes = 0
        var deadLetters = 0
        var evicted = 0
        var refused = 0
        /// Claims made since the spool opened; claims run one at a time on the writer queue.
        var claims = 0
        /// Set when acknowledgements failed to commit: claims find nothing ready until then.
        var claimsWaitUntil: Date?
        var isClosed = false
    }

    /// How long claims wait after acknowledgements failed to commit (their records are pending again).
    static let claimPauseAfterFailedAcknowledgement: TimeInterval = 5

    /// The counts a write changes, copied out of the state and applied back after the commit, so a rolled back
    /// transaction leaves them untouched.
    struct Ledger {
        var claimed: [Int64: (priority: PriorityClass, bytes: Int)]
        var stored: [Int]
        var bytes: Int

        init(_ state: State) {
            claimed = state.claimed
            stored = state.stored
            bytes = state.bytes
        }

        func apply(to state: inout State) {
            state.stored = stored
            state.bytes = bytes
        }
    }

    struct CommitOutcome: Sendable {
        var receipts: [AppendReceipt]
        var classes: Set<PriorityClass>
    }

    let path: String
    let database: DatabasePool
    private let lock: SpoolLock
    let maximumBytes: Int
    let minimumFreeDiskBytes: Int
    /// SQLite's page size for this file, fixed once the file exists.
    let pageSize: Int
    let logger: Logger
    let state: Mutex<State>

    static func open(
        path: String, maximumBytes: Int, minimumFreeDiskBytes: Int, logger: Logger
    ) async throws -> SpoolDatabase {
        let lock = try SpoolLock(databasePath: path)
        do {
            var configuration = Configuration()
            configuration.label = "logshipd.spool"
            // Checkpoint the WAL before it outgrows half the free-space margin, and shrink it back after.
            let walLimit = max(minimumFreeDiskBytes / 2, 64 << 10)
            configuration.prepareDatabase { db in
                // FULL: a commit is on disk when it returns, which is what `logctl send` is told.
                try db.execute(sql: "PRAGMA synchronous = FULL")
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                try db.execute(sql: "PRAGMA wal_autocheckpoint = \(max(16, min(1000, walLimit / pageSize)))")
                try db.execute(sql: "PRAGMA journal_size_limit = \(walLimit)")
            }
            let database = try DatabasePool(path: path, configuration: configuration)
            try await database.write { db in try Self.migrate(db) }
            let (initial, pageSize) = try await database.read { db in
                (try Self.loadCounts(db), try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096)
            }
            return SpoolDatabase(
                path: path, database: database, lock: lock, maximumBytes: maximumBytes,
                minimumFreeDiskBytes: minimumFreeDiskBytes, pageSize: pageSize, logger: logger, initial: initial)
        } catch {
            lock.release()
            throw SpoolError.storage("cannot open \(path): \(error)")
        }
    }

    private init(
        path: String, database: DatabasePool, lock: SpoolLock, maximumBytes: Int, minimumFreeDiskBytes: Int,
        pageSize: Int, logger: Logger, initial: State
    ) {
        self.path = path
        self.database = database
        self.lock = lock
        self.maximumBytes = maximumBytes
        self.minimumFreeDiskBytes = minimumFreeDiskBytes
        self.pageSize = pageSize
        self.logger = logger
        state = Mutex(initial)
    }

    /// Runs a settling write (acknowledge, release, dead letter, requeue, purge), mapping SQLite errors.
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

    // MARK: Status and shutdown

    func statistics() -> SpoolStatistics {
        state.withLock { state in
            var statistics = SpoolStatistics()
            let unclaimed = Self.unclaimed(state)
            for priority in PriorityClass.allCases { statistics.pending[priority] = unclaimed[priority.rawValue] }
            statistics.claimed = state.claimed.count
            statistics.bytes = state.bytes
            statistics.deadLetters = state.deadLetters
            statistics.evicted = state.evicted
            statistics.refused = state.refused
            return statistics
        }
    }

    func close() {
        state.withLock { $0.isClosed = true }
        try? database.close()
        lock.release()
    }

    func checkOpen() throws {
        if state.withLock({ $0.isClosed }) { throw SpoolError.closed }
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
}
