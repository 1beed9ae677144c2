#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import Logging
import Synchronization

extension SpoolDatabase {
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
            state.withLock { $0.refused += count }
            logger.error(
                "disk full; records refused",
                metadata: ["logship.spool.path": "\(path)", "logship.spool.refused": "\(count)"])
            throw SpoolError.diskFull
        } catch {
            throw SpoolError.storage("\(error)")
        }
    }

    /// The position last committed for `input`.
    func savedPosition(of input: String) async throws -> String? {
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

    /// Runs on the writer queue: inserts and evicts in one transaction, then updates the counts.
    private func insert(_ groups: [SpoolAppend], _ db: Database) throws -> CommitOutcome {
        var ledger = state.withLock { Ledger($0) }
        var receipts: [AppendReceipt] = []
        var classes: Set<PriorityClass> = []
        try db.inTransaction {
            let statement = try db.cachedStatement(
                sql: "INSERT INTO record (priority, line, size) VALUES (?, ?, ?)")
            var diskRoom = try self.diskRoom(db)
            for group in groups {
                var receipt = AppendReceipt()
                if !group.evicting {
                    let needed = group.entries.reduce(0) { $0 + $1.accountedBytes }
                    guard needed <= min(maximumBytes - ledger.bytes, diskRoom) else {
                        receipt.deferred = group.entries.count
                        receipts.append(receipt)
                        continue
                    }
                }
                for entry in group.entries {
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
                if let position = group.position {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO input_position (input, cursor) VALUES (?, ?)",
                        arguments: [position.input, position.cursor])
                }
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
}
