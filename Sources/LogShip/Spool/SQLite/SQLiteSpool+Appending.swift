#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import Logging
import Synchronization

extension SQLiteSpool {
    /// What one group commit came to: a receipt per group, the classes that gained records, what waits for room,
    /// and what was evicted and refused for it.
    struct CommitOutcome: Sendable {
        var receipts: [AppendReceipt]
        var classes: Set<PriorityClass>
        /// By the group's index, what of it waits for room.
        var waiting: [Int: SpoolAppend] = [:]
        var room = SpoolRoomReports.Tally()
    }

    public func append(
        _ entries: [SpoolEntry], position: InputPosition?, evicting: Bool
    ) async throws -> AppendReceipt {
        try await commits.append(SpoolAppend(entries: entries, position: position, evicting: evicting))
    }

    public func enqueue(_ entries: [SpoolEntry]) async throws {
        try await commits.enqueue(SpoolAppend(entries: entries, position: nil, waitsForRoom: true))
    }

    public func stopHoldingSenders() {
        commits.stopHolding()
    }

    /// Writes groups of entries in one transaction, evicting for room as ``EvictionPolicy`` allows.
    ///
    /// Room is the smaller of what the budget and what the disk allow, so a filling disk is met like a full
    /// budget. Should SQLite still find the disk full, with the reserve given too, nothing is written: groups
    /// that wait for room wait, the journal's are deferred, and the others are refused, the disk named.
    func commit(_ groups: [SpoolAppend]) async throws -> CommitOutcome {
        try checkOpen()
        do {
            return try await writeMakingRoom { db in try self.insert(groups, db) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            let refusal = SpoolRefusal.disk(free: disk.sample()?.free ?? 0, keptFree: disk.minimumFree)
            var outcome = CommitOutcome(receipts: [], classes: [])
            for (index, group) in groups.enumerated() {
                if group.waitsForRoom {
                    outcome.waiting[index] = group
                    outcome.receipts.append(AppendReceipt())
                } else if !group.evicting {
                    outcome.receipts.append(AppendReceipt(deferred: group.entries.count))
                } else {
                    outcome.receipts.append(AppendReceipt(refused: group.entries.count, refusal: refusal))
                    outcome.room.refused[refusal, default: 0] += group.entries.count
                }
            }
            let refused = outcome.room.refused.values.reduce(0, +)
            ledger.withLock { ledger in
                ledger.refused += refused
                ledger.refusedForDisk += refused
                ledger.lastDiskShortage = Date()
            }
            return outcome
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

    /// What the disk allows: free space beyond what the spool leaves free, plus free pages inside the file, which
    /// SQLite reuses before it grows the file. Once the reserve is given to a full disk, a commit adds at most
    /// half of what the WAL's file holds: more would need the WAL to grow on a disk with no room for it.
    private func diskRoom(_ db: Database) throws -> SpoolLedger.DiskRoom {
        let freePages = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
        // Unknown room: the budget alone decides.
        guard let (room, sample) = disk.room(freePageBytes: freePages * pageSize) else { return .unlimited }
        return SpoolLedger.DiskRoom(
            bytes: room, free: sample.free, keptFree: disk.minimumFree,
            perCommit: disk.holdsReserve ? nil : walFileBytes / 2)
    }

    /// Runs on the writer queue: plans under the ledger's lock, writes the chunks and positions in one
    /// transaction, then tells the ledger.
    private func insert(_ groups: [SpoolAppend], _ db: Database) throws -> CommitOutcome {
        let room = try diskRoom(db)
        var plan: SpoolLedger.AppendPlan
        var loaded: Set<Int64> = []
        planning: while true {
            switch ledger.withLock({ $0.planAppend(groups, maximumBytes: maximumBytes, disk: room) }) {
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
        ledger.withLock { $0.count(plan) }
        return CommitOutcome(receipts: plan.receipts, classes: plan.classes, waiting: plan.waiting, room: plan.room)
    }
}
