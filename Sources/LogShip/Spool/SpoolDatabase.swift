#if canImport(Glibc)
import Glibc
#endif
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
        var isClosed = false
    }

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
    private let database: DatabasePool
    private let lock: SpoolLock
    private let maximumBytes: Int
    private let minimumFreeDiskBytes: Int
    /// SQLite's page size for this file, fixed once the file exists.
    private let pageSize: Int
    private let logger: Logger
    private let state: Mutex<State>

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

    // MARK: Appending

    /// Writes groups of entries in one transaction, evicting for room as ``EvictionPolicy`` allows.
    ///
    /// Room is the smaller of what the budget and what the disk allow, so a filling disk is met like a full
    /// budget. Should SQLite still find the disk full, the commit fails with ``SpoolError/diskFull`` and its
    /// records are counted as refused; nothing else is affected.
    func commit(_ groups: [[SpoolEntry]]) async throws -> CommitOutcome {
        try checkOpen()
        do {
            return try await database.writeWithoutTransaction { db in try self.insert(groups, db) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            let count = groups.reduce(0) { $0 + $1.count }
            state.withLock { $0.refused += count }
            logger.error(
                "disk full; records refused",
                metadata: ["logship.spool.path": "\(path)", "logship.spool.refused": "\(count)"])
            throw SpoolError.diskFull
        } catch {
            throw SpoolError.storage("\(error)")
        }
    }

    /// Bytes the spool may still add on disk: free space beyond the margin, plus free pages inside the file,
    /// which SQLite reuses before it grows the file.
    private func diskRoom(_ db: Database) throws -> Int {
        var status = statvfs()
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        guard statvfs(directory.isEmpty ? "/" : directory, &status) == 0 else { return Int.max }
        let available = Int(status.f_bavail) * Int(status.f_frsize)
        let freePages = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
        return available - minimumFreeDiskBytes + freePages * pageSize
    }

    /// Runs a settling write (acknowledge, release, dead letter, requeue, purge), mapping SQLite errors.
    private func settlingWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try checkOpen()
        do {
            return try await database.writeWithoutTransaction(body)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            throw SpoolError.diskFull
        } catch {
            throw SpoolError.storage("\(error)")
        }
    }

    /// Runs on the writer queue: inserts and evicts in one transaction, then updates the counts.
    private func insert(_ groups: [[SpoolEntry]], _ db: Database) throws -> CommitOutcome {
        var ledger = state.withLock { Ledger($0) }
        var receipts: [AppendReceipt] = []
        var classes: Set<PriorityClass> = []
        try db.inTransaction {
            let statement = try db.cachedStatement(
                sql: "INSERT INTO record (priority, line, size) VALUES (?, ?, ?)")
            var diskRoom = try self.diskRoom(db)
            for group in groups {
                var receipt = AppendReceipt()
                for entry in group {
                    var room = min(maximumBytes - ledger.bytes, diskRoom)
                    if entry.accountedBytes > room {
                        let (count, bytes) = try evict(
                            bytes: entry.accountedBytes - room, for: entry.priority, ledger: &ledger, db)
                        receipt.evicted += count
                        diskRoom += bytes
                        room = min(maximumBytes - ledger.bytes, diskRoom)
                    }
                    guard entry.accountedBytes <= room else {
                        if entry.priority == .crash {
                            receipt.refused += 1
                        } else {
                            receipt.evicted += 1
                        }
                        continue
                    }
                    try statement.execute(arguments: [entry.priority.rawValue, Data(entry.line), entry.line.count])
                    ledger.stored[entry.priority.rawValue] += 1
                    ledger.bytes += entry.accountedBytes
                    diskRoom -= entry.accountedBytes
                    receipt.accepted += 1
                    classes.insert(entry.priority)
                }
                receipts.append(receipt)
            }
            return .commit
        }
        let evicted = receipts.reduce(0) { $0 + $1.evicted }
        let refused = receipts.reduce(0) { $0 + $1.refused }
        state.withLock { state in
            ledger.apply(to: &state)
            state.evicted += evicted
            state.refused += refused
        }
        return CommitOutcome(receipts: receipts, classes: classes)
    }

    /// Deletes the oldest unclaimed records of the classes ``EvictionPolicy`` allows until `bytes` are freed;
    /// deletes nothing when they cannot free that much, since the newcomer would not fit anyway.
    ///
    /// - Returns: How many records were evicted and how many accounted bytes they freed.
    private func evict(
        bytes: Int, for priority: PriorityClass, ledger: inout Ledger, _ db: Database
    ) throws -> (count: Int, bytes: Int) {
        var freed = 0
        var victims: [(id: Int64, priority: PriorityClass, bytes: Int)] = []
        for victimClass in EvictionPolicy.victims(for: priority) where freed < bytes {
            let rows = try Row.fetchCursor(
                db, sql: "SELECT id, size FROM record WHERE priority = ? ORDER BY id", arguments: [victimClass.rawValue])
            while freed < bytes, let row = try rows.next() {
                let id: Int64 = row[0]
                guard ledger.claimed[id] == nil else { continue }
                let size: Int = row[1]
                victims.append((id, victimClass, size + SpoolEntry.overhead))
                freed += size + SpoolEntry.overhead
            }
        }
        guard freed >= bytes else { return (0, 0) }
        for victim in victims {
            ledger.stored[victim.priority.rawValue] -= 1
            ledger.bytes -= victim.bytes
        }
        try Self.execute("DELETE FROM record WHERE id IN", ids: victims.map(\.id), db)
        return (victims.count, freed)
    }

    // MARK: Claiming and settling

    func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        try checkOpen()
        let now = Date()
        return try await database.writeWithoutTransaction { db in
            let claimed = self.state.withLock { $0.claimed }
            let rows = try Row.fetchCursor(
                db, sql: "SELECT id, not_before, size, line FROM record WHERE priority = ? ORDER BY id",
                arguments: [priority.rawValue])
            var records: [SpooledRecord] = []
            var sizes: [Int] = []
            var bytes = 0
            var moreReady = false
            while let row = try rows.next() {
                let id: Int64 = row[0]
                guard claimed[id] == nil else { continue }
                let notBefore = (row[1] as Double?).map { Date(timeIntervalSince1970: $0) }
                let ready = notBefore.map { $0 <= now } ?? true
                if records.isEmpty, let notBefore, !ready { return .waiting(until: notBefore) }
                let size: Int = row[2]
                if !ready || records.count == limits.maxRecords || (!records.isEmpty && bytes + size + 1 > limits.maxBytes) {
                    moreReady = ready
                    break
                }
                records.append(SpooledRecord(sequence: id, line: try row.withUnsafeData(atIndex: 3) { $0.map { Array($0) } ?? [] }))
                sizes.append(size)
                bytes += size + 1
            }
            guard !records.isEmpty else { return .empty }
            let number = self.state.withLock { state in
                for (record, size) in zip(records, sizes) {
                    state.claimed[record.sequence] = (priority, size + SpoolEntry.overhead)
                }
                state.claims += 1
                return state.claims
            }
            return .batch(Batch(priority: priority, records: records, number: number), moreReady: moreReady)
        }
    }

    func acknowledge(_ batch: Batch) async throws {
        try await settle(batch) { db, ids in
            try Self.execute("DELETE FROM record WHERE id IN", ids: ids, db)
        }
    }

    func release(_ batch: Batch, retryAt: Date) async throws {
        try await settlingWrite { db in
            try db.inTransaction {
                for chunk in batch.sequences.chunked(500) {
                    try db.execute(
                        sql: "UPDATE record SET not_before = ? WHERE id IN (\(Self.placeholders(chunk.count)))",
                        arguments: [retryAt.timeIntervalSince1970] + StatementArguments(chunk))
                }
                return .commit
            }
            self.state.withLock { state in
                for id in batch.sequences { state.claimed[id] = nil }
            }
        }
    }

    func deadLetter(_ batch: Batch, failure: DeliveryFailure) async throws {
        let failedAt = Timestamp.now().rfc3339
        try await settle(batch) { db, ids in
            for chunk in ids.chunked(500) {
                try db.execute(
                    sql: """
                        INSERT INTO dead_letter (record_id, priority, line, status, reason, failed_at)
                        SELECT id, priority, line, ?, ?, ? FROM record WHERE id IN (\(Self.placeholders(chunk.count)))
                        """,
                    arguments: StatementArguments([failure.status, failure.reason, failedAt] as [(any DatabaseValueConvertible)?])
                        + StatementArguments(chunk))
            }
            try Self.execute("DELETE FROM record WHERE id IN", ids: ids, db)
        }
        state.withLock { $0.deadLetters += batch.records.count }
    }

    /// Removes claimed records from the record table with `body` and from the counts.
    private func settle(_ batch: Batch, _ body: @escaping @Sendable (Database, [Int64]) throws -> Void) async throws {
        try await settlingWrite { db in
            try db.inTransaction {
                try body(db, batch.sequences)
                return .commit
            }
            self.state.withLock { state in
                for id in batch.sequences {
                    guard let claimed = state.claimed.removeValue(forKey: id) else { continue }
                    state.stored[claimed.priority.rawValue] -= 1
                    state.bytes -= claimed.bytes
                }
            }
        }
    }

    /// Drops the claims on `batch`'s records; their rows are untouched, so they are pending as stored.
    func returnToPending(_ batch: Batch) {
        state.withLock { state in
            for id in batch.sequences { state.claimed[id] = nil }
        }
    }

    func pendingClasses() -> Set<PriorityClass> {
        state.withLock { state in
            let unclaimed = Self.unclaimed(state)
            return Set(PriorityClass.allCases.filter { unclaimed[$0.rawValue] > 0 })
        }
    }

    /// Unclaimed records per class (indexed by raw value).
    private static func unclaimed(_ state: State) -> [Int] {
        var unclaimed = state.stored
        for claimed in state.claimed.values { unclaimed[claimed.priority.rawValue] -= 1 }
        return unclaimed
    }

    // MARK: Dead letters

    func deadLetters(limit: Int) async throws -> [DeadLetter] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT id, priority, line, status, reason, failed_at FROM dead_letter ORDER BY id LIMIT ?",
                arguments: [limit]
            ).map { row in
                DeadLetter(
                    id: row[0],
                    priority: PriorityClass(rawValue: row[1])?.description ?? "?",
                    line: try row.withUnsafeData(atIndex: 2) { String(decoding: $0 ?? Data(), as: UTF8.self) },
                    status: row[3], reason: row[4], failedAt: row[5])
            }
        }
    }

    /// Returns how many moved, and their classes.
    func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> (Int, Set<PriorityClass>) {
        let (moved, classes) = try await settlingWrite { db -> ([PriorityClass: (count: Int, bytes: Int)], Set<PriorityClass>) in
            var moved: [PriorityClass: (count: Int, bytes: Int)] = [:]
            try db.inTransaction {
                let filter = Self.filter(selection)
                let rows = try Row.fetchAll(
                    db, sql: "SELECT priority, count(*), total(length(line)) FROM dead_letter \(filter.sql) GROUP BY priority",
                    arguments: filter.arguments)
                for row in rows {
                    guard let priority = PriorityClass(rawValue: row[0]) else { continue }
                    let count: Int = row[1]
                    let bytes = Int(row[2] as Double)
                    moved[priority] = (count, bytes + count * SpoolEntry.overhead)
                }
                // Back at the original id: the record takes its old place in its class's order.
                try db.execute(
                    sql: """
                        INSERT INTO record (id, priority, line, size)
                        SELECT record_id, priority, line, length(line) FROM dead_letter \(filter.sql)
                        """,
                    arguments: filter.arguments)
                try db.execute(sql: "DELETE FROM dead_letter \(filter.sql)", arguments: filter.arguments)
                return .commit
            }
            self.state.withLock { state in
                for (priority, entry) in moved {
                    state.stored[priority.rawValue] += entry.count
                    state.bytes += entry.bytes
                    state.deadLetters -= entry.count
                }
            }
            return (moved, Set(moved.keys))
        }
        return (moved.values.reduce(0) { $0 + $1.count }, classes)
    }

    func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let purged = try await settlingWrite { db -> Int in
            let filter = Self.filter(selection)
            try db.execute(sql: "DELETE FROM dead_letter \(filter.sql)", arguments: filter.arguments)
            return db.changesCount
        }
        state.withLock { $0.deadLetters -= purged }
        return purged
    }

    private static func filter(_ selection: DeadLetterSelection) -> (sql: String, arguments: StatementArguments) {
        switch selection {
        case .all: ("", [])
        case .ids(let ids): ("WHERE id IN (\(placeholders(ids.count)))", StatementArguments(ids))
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

    private func checkOpen() throws {
        if state.withLock({ $0.isClosed }) { throw SpoolError.closed }
    }

    // MARK: SQL helpers

    private static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ",")
    }

    /// Runs `prefix (?, ?, …)` over `ids` in chunks that stay under SQLite's variable limit.
    private static func execute(_ prefix: String, ids: [Int64], _ db: Database) throws {
        for chunk in ids.chunked(500) {
            try db.execute(sql: "\(prefix) (\(placeholders(chunk.count)))", arguments: StatementArguments(chunk))
        }
    }
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
