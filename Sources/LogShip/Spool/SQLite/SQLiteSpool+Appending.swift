#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import Logging
import Synchronization

extension SQLiteSpool {
    /// What one group commit came to: a receipt per group, and the classes that gained records.
    struct CommitOutcome: Sendable {
        var receipts: [AppendReceipt]
        var classes: Set<PriorityClass>
    }

    public func append(_ entries: [SpoolEntry], position: InputPosition?, evicting: Bool) async throws -> AppendReceipt {
        try await commits.append(SpoolAppend(entries: entries, position: position, evicting: evicting))
    }

    public func enqueue(_ entries: [SpoolEntry]) async throws {
        try await commits.enqueue(SpoolAppend(entries: entries, position: nil))
    }

    /// Writes groups of entries in one transaction, evicting for room as ``EvictionPolicy`` allows.
    ///
    /// Room is the smaller of what the budget and what the disk allow, so a filling disk is met like a full
    /// budget. Should SQLite still find the disk full, the commit fails with ``SpoolError/diskFull`` and its
    /// records are counted as refused; nothing else is affected.
    func commit(_ groups: [SpoolAppend]) async throws -> CommitOutcome {
        try checkOpen()
        do {
            return try await database.writeWithoutTransaction { db in try self.insert(groups, db) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            let count = groups.reduce(0) { $0 + $1.entries.count }
            ledger.withLock { $0.refused += count }
            logger.error(
                "disk full; records refused",
                metadata: ["logship.spool.path": "\(path)", "logship.spool.refused": "\(count)"])
            throw SpoolError.diskFull
        } catch {
            throw SpoolError.storage("\(error)")
        }
    }

    public func savedPosition(of input: String) async throws -> String? {
        try checkOpen()
        return try await database.read { db in
            try String.fetchOne(db, sql: "SELECT cursor FROM input_position WHERE input = ?", arguments: [input])
        }
    }

    /// Bytes the spool may still add on disk: free space beyond the margin, plus free pages inside the file,
    /// which SQLite reuses before it grows the file.
    private func diskRoom(_ db: Database) throws -> Int {
        var status = statvfs()
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        // Unknown room: the budget alone decides (and the sum below cannot overflow).
        guard statvfs(directory.isEmpty ? "/" : directory, &status) == 0 else { return maximumBytes }
        let available = Int(status.f_bavail) * Int(status.f_frsize)
        let freePages = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
        return available - minimumFreeDiskBytes + freePages * pageSize
    }

    /// Runs on the writer queue: plans under the ledger's lock, writes the chunks and positions in one
    /// transaction, then tells the ledger.
    private func insert(_ groups: [SpoolAppend], _ db: Database) throws -> CommitOutcome {
        let room = try diskRoom(db)
        var plan: SpoolLedger.AppendPlan
        var loaded: Set<Int64> = []
        planning: while true {
            switch ledger.withLock({ $0.planAppend(groups, maximumBytes: maximumBytes, diskRoom: room) }) {
            case .plan(let planned):
                plan = planned
                break planning
            case .needsLines(let priority, let id):
                // An eviction needs the sizes of a chunk's records: read its lines here, on the writer. A damaged
                // chunk is taken out instead, which makes room too, and the plan is made again without it.
                guard loaded.insert(id).inserted else {
                    throw SpoolError.storage("chunk \(id) of the spool was read and is still not in memory")
                }
                do {
                    guard let lines = try Self.lines(ofChunk: id, db) else {
                        try quarantine(chunk: id, of: priority, .missing, db)
                        continue
                    }
                    if !ledger.withLock({ $0.attach(lines, toChunk: id, of: priority) }) {
                        try quarantine(
                            chunk: id, of: priority,
                            .linesDoNotMatch("its lines are not as many as the spool holds", lines: lines), db)
                    }
                } catch let damage as ChunkDamage {
                    try quarantine(chunk: id, of: priority, damage, db)
                }
            }
        }
        try commit(plan.writes, reverting: plan.changes, db) { db in
            for position in plan.positions {
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO input_position (input, cursor) VALUES (?, ?)")
                    .execute(arguments: [position.input, position.cursor])
            }
        }
        ledger.withLock { $0.count(plan.receipts) }
        return CommitOutcome(receipts: plan.receipts, classes: plan.classes)
    }
}
