import Foundation

extension SpoolLedger {
    /// What one append transaction writes, and what it has already changed in the ledger (its evictions).
    struct AppendPlan: Sendable {
        var writes = ChunkWrites()
        /// One per group, in order.
        var receipts: [AppendReceipt] = []
        /// The groups' input positions, in order.
        var positions: [InputPosition] = []
        /// The evictions, to revert if the transaction fails.
        var changes: [Change] = []
        /// The classes that gain records.
        var classes: Set<PriorityClass> = []
        /// What the groups that wait for room could not store yet, by the group's index: its first entry without
        /// room and every entry after it, to be planned again once room may have been made.
        var waiting: [Int: SpoolAppend] = [:]
        /// What the plan evicted and refused, by cause and reason, for the log.
        var room = SpoolRoomReports.Tally()
    }

    /// What the disk allows a commit: the bytes the spool may still add there, and, for the words of a refusal,
    /// what the filesystem has free and what the spool leaves free. A spool without a disk has room enough.
    struct DiskRoom: Sendable {
        var bytes: Int
        var free = 0
        var keptFree = 0
        /// The most bytes of records one commit may add, while the disk is so short that the commit's WAL must
        /// fit in what the WAL's file already holds; `nil` otherwise.
        var perCommit: Int?

        /// Far beyond any budget, small enough that room freed and added back cannot overflow.
        static let unlimited = DiskRoom(bytes: Int.max / 4)
    }

    enum AppendStep: Sendable {
        case plan(AppendPlan)
        /// An eviction must know the sizes of a chunk's records: read its lines, attach them, and plan again.
        /// Nothing was changed.
        case needsLines(PriorityClass, chunkID: Int64)
    }

    /// The largest blob a new chunk gets; a larger commit is split. Small enough that the chunks kept in memory
    /// for delivery stay a few MiB, large enough that a busy commit writes a few rows; and, with room for the
    /// array's header, below the size from which glibc maps a block apart (``MallocTuning/mapThreshold``): above
    /// it every chunk written is mapped, faulted in page by page and unmapped (BENCHMARKS.md, Measured choices).
    static let maximumChunkBytes = MallocTuning.mapThreshold - (32 << 10)
    /// A class's newest chunk smaller than this takes the class's next records instead of a new chunk being
    /// written, so that records arriving one at a time do not make a chunk each.
    static let extendBelowBytes = 32 << 10

    /// Plans storing `groups`: which entries fit (evicting as ``EvictionPolicy`` allows), in which chunks.
    ///
    /// Room is the smaller of what the budget and what the disk allow; dead letters hold theirs (see
    /// ``deadLetterShare``). Evicted records are marked settled at once; the new records join the ledger when
    /// ``apply(_:)`` is told the writes committed. An entry that finds no room is refused with the reason
    /// (``AppendReceipt/refusal``), or, in a group that waits for room, is left with the rest of its group in
    /// ``AppendPlan/waiting``: it is never stored only to be the one evicted.
    mutating func planAppend(_ groups: [SpoolAppend], maximumBytes: Int, disk: DiskRoom) -> AppendStep {
        var plan = AppendPlan()
        var total = bytes
        var diskRoom = disk.bytes
        var added = 0
        var accepted = [[SpoolEntry]](repeating: [], count: PriorityClass.allCases.count)
        // What each sender gains by this plan in each class, weighed with what it holds when evicting: counted
        // from the first eviction on, since nearly every plan evicts nothing.
        var planned: [[UInt32?: Int]]?
        for (groupIndex, group) in groups.enumerated() {
            var receipt = AppendReceipt()
            if !group.evicting {
                let needed = group.entries.reduce(0) { $0 + $1.accountedBytes }
                guard needed <= min(maximumBytes - total, diskRoom) else {
                    receipt.deferred = group.entries.count
                    plan.receipts.append(receipt)
                    continue
                }
            }
            for (index, entry) in group.entries.enumerated() {
                var room = min(maximumBytes - total, diskRoom)
                if entry.accountedBytes > room {
                    let need = Need(
                        budget: max(0, entry.accountedBytes - (maximumBytes - total)),
                        disk: max(0, entry.accountedBytes - diskRoom))
                    if planned == nil { planned = Self.bySenderBytes(accepted) }
                    switch evict(need, for: entry, planned: planned!) {
                    case .needsLines(let priority, let id):
                        revert(plan.changes)
                        return .needsLines(priority, chunkID: id)
                    case .evicted(let changes, let counts, let freed):
                        plan.changes += changes
                        receipt.evicted += counts.values.reduce(0, +)
                        plan.room.evicted[need.disk > 0 ? .disk : .budget, default: [:]]
                            .merge(counts, uniquingKeysWith: +)
                        total -= freed.budget
                        diskRoom += freed.disk
                        room = min(maximumBytes - total, diskRoom)
                    case .impossible:
                        break
                    }
                }
                let fitsCommit = disk.perCommit.map { added + entry.accountedBytes <= $0 } ?? true
                guard entry.accountedBytes <= room, fitsCommit || added == 0 else {
                    let refusal = refusal(
                        of: entry, maximumBytes: maximumBytes, disk: disk,
                        diskIsShort: !fitsCommit || diskRoom < maximumBytes - total)
                    if group.waitsForRoom && !refusal.isPermanent {
                        plan.waiting[groupIndex] = SpoolAppend(
                            entries: Array(group.entries[index...]), waitsForRoom: true)
                        break
                    }
                    receipt.refused += 1
                    receipt.refusal = receipt.refusal ?? refusal
                    plan.room.refused[refusal, default: 0] += 1
                    continue
                }
                accepted[entry.priority.rawValue].append(entry)
                planned?[entry.priority.rawValue][entry.sender, default: 0] += entry.accountedBytes
                total += entry.accountedBytes
                diskRoom -= entry.accountedBytes
                added += entry.accountedBytes
                receipt.accepted += 1
                plan.classes.insert(entry.priority)
            }
            plan.receipts.append(receipt)
            if let position = group.position { plan.positions.append(position) }
        }
        var evictedChunks: [PriorityClass: Set<Int64>] = [:]
        for change in plan.changes { evictedChunks[change.priority, default: []].insert(change.chunkID) }
        plan.writes = writes(settling: evictedChunks)
        var nextID = nextChunkID
        for priority in PriorityClass.allCases where !accepted[priority.rawValue].isEmpty {
            planChunks(for: accepted[priority.rawValue][...], of: priority, nextID: &nextID, into: &plan.writes)
        }
        return .plan(plan)
    }

    /// Why `entry` finds no room even after what could be evicted for it.
    private func refusal(of entry: SpoolEntry, maximumBytes: Int, disk: DiskRoom, diskIsShort: Bool) -> SpoolRefusal {
        if entry.accountedBytes > maximumBytes { return .larger(than: maximumBytes) }
        if diskIsShort { return .disk(free: disk.free, keptFree: disk.keptFree) }
        let onlyCrash = PriorityClass.allCases.allSatisfy { $0 == .crash || queues[$0.rawValue].bytes == 0 }
        return entry.priority == .crash && onlyCrash
            ? .fullOfCrashRecords(budget: maximumBytes) : .full(budget: maximumBytes)
    }

    /// Counts what a committed append evicted and refused.
    mutating func count(_ receipts: [AppendReceipt]) {
        for receipt in receipts {
            evicted += receipt.evicted
            refused += receipt.refused
        }
    }

    /// Counts what a committed append evicted and refused, and of those what the disk was short for.
    mutating func count(_ plan: AppendPlan, now: Date = Date()) {
        count(plan.receipts)
        let forDisk = (plan.room.evicted[.disk]?.values.reduce(0, +) ?? 0)
            + plan.room.refused.filter(\.key.isDisk).values.reduce(0, +)
        guard forDisk > 0 else { return }
        evictedForDisk += plan.room.evicted[.disk]?.values.reduce(0, +) ?? 0
        refusedForDisk += plan.room.refused.filter(\.key.isDisk).values.reduce(0, +)
        lastDiskShortage = now
    }

    /// Lays out one commit's entries of a class in chunks of one sender each, so that eviction can take one
    /// sender's records without the others' (``evict(_:for:)``): each sender's entries in their order, the senders
    /// in the order they first appear, the one whose chunk is the class's newest first. Different senders' records
    /// of one commit arrived within its few milliseconds, with no order between them to keep.
    ///
    /// The class's newest chunk, if it is small and of the first sender, takes the first entries; the rest go in
    /// new chunks.
    private func planChunks(
        for entries: ArraySlice<SpoolEntry>, of priority: PriorityClass, nextID: inout Int64,
        into writes: inout ChunkWrites
    ) {
        let queue = queues[priority.rawValue]
        var sequence = queue.nextSequence
        var groups = Self.bySender(entries)
        if let newest = queue.chunks.last, let index = groups.firstIndex(where: { $0.sender == newest.sender }) {
            groups.insert(groups.remove(at: index), at: 0)
        }
        for (group, (sender, senderEntries)) in groups.enumerated() {
            var entries = senderEntries
            if group == 0, let newest = queue.chunks.last, newest.sender == sender,
                newest.endSequence == queue.nextSequence, var lines = newest.lines,
                newest.blobBytes < Self.extendBelowBytes, newest.settledCount < newest.count
            {
                let taken = Self.prefix(of: entries, fittingIn: Self.maximumChunkBytes - newest.blobBytes)
                if !taken.isEmpty {
                    lines.append(taken)
                    writes.extensions.append(ChunkWrites.Extension(
                        id: newest.id, priority: priority, lines: lines, added: taken.count,
                        addedBytes: taken.reduce(0) { $0 + $1.accountedBytes }))
                    entries = entries.dropFirst(taken.count)
                    sequence += Int64(taken.count)
                }
            }
            while !entries.isEmpty {
                let taken = Swift.max(1, Self.prefix(of: entries, fittingIn: Self.maximumChunkBytes).count)
                writes.insertions.append(ChunkWrites.Insertion(
                    id: nextID, priority: priority, firstSequence: sequence, lines: ChunkLines(entries.prefix(taken)),
                    sender: sender))
                nextID += 1
                sequence += Int64(taken)
                entries = entries.dropFirst(taken)
            }
        }
    }

    /// The accounted bytes of `entries`, per class and sender.
    private static func bySenderBytes(_ entries: [[SpoolEntry]]) -> [[UInt32?: Int]] {
        entries.map { entries in
            entries.reduce(into: [:]) { bytes, entry in bytes[entry.sender, default: 0] += entry.accountedBytes }
        }
    }

    /// `entries` by sender: each sender's in their order, the senders in the order they first appear.
    private static func bySender(
        _ entries: ArraySlice<SpoolEntry>
    ) -> [(sender: UInt32?, entries: ArraySlice<SpoolEntry>)] {
        // Nearly every commit is one sender's: no table, no copy.
        if let first = entries.first, entries.allSatisfy({ $0.sender == first.sender }) {
            return [(first.sender, entries)]
        }
        var groups: [(sender: UInt32?, entries: [SpoolEntry])] = []
        var index: [UInt32?: Int] = [:]
        for entry in entries {
            if let position = index[entry.sender] {
                groups[position].entries.append(entry)
            } else {
                index[entry.sender] = groups.count
                groups.append((entry.sender, [entry]))
            }
        }
        return groups.map { ($0.sender, $0.entries[...]) }
    }

    /// The leading entries whose lines, each with its newline, fit in `room` bytes.
    private static func prefix(of entries: ArraySlice<SpoolEntry>, fittingIn room: Int) -> ArraySlice<SpoolEntry> {
        var used = 0
        var end = entries.startIndex
        while end < entries.endIndex, used + entries[end].line.count + 1 <= room {
            used += entries[end].line.count + 1
            end += 1
        }
        return entries[..<end]
    }

    /// Bytes an eviction must free: of the budget (records' accounted bytes) and of the disk. The disk gets back
    /// only what deleted chunk rows held: records evicted from a chunk that keeps others stay in its blob.
    private struct Need {
        var budget: Int
        var disk: Int

        func isMet(by freed: Need) -> Bool { freed.budget >= budget && freed.disk >= disk }
    }

    private enum Eviction {
        case evicted([Change], counts: [PriorityClass: Int], freed: Need)
        /// Nothing is evicted: even every record the policy allows would not free enough, or the newcomer's own
        /// sender is the one to give way and has nothing stored to give.
        case impossible
        case needsLines(PriorityClass, Int64)
    }

    /// Settles pending records of the classes ``EvictionPolicy`` allows for `priority` until `need` is met;
    /// settles nothing when it cannot be, since the newcomer would not fit anyway.
    ///
    /// The lowest class goes first. Within a class, the sender holding the most bytes of it (pending and claimed,
    /// and what `planned` gives it in this commit) loses its oldest chunk first, and the senders are weighed again
    /// after each chunk: one noisy sender cannot evict a quiet one's records while it holds more than they do.
    /// When the heaviest sender of the newcomer's own class is the newcomer's and has nothing stored left to evict
    /// (its records are in this very commit), the newcomer goes instead.
    ///
    /// A chunk no delivery has touched goes whole when all of it is needed, or when the disk needs room, without
    /// its lines; otherwise its records are counted one by one, which needs its lines. While the disk needs room,
    /// every pending record of a chunk goes: only a chunk left with no record to deliver is deleted.
    private mutating func evict(
        _ need: Need, for newcomer: SpoolEntry, planned: [[UInt32?: Int]]
    ) -> Eviction {
        var victims: [(priority: PriorityClass, position: Int, index: Int?)] = []
        var freed = Need(budget: 0, disk: 0)
        var counts: [PriorityClass: Int] = [:]
        search: for victimClass in EvictionPolicy.victims(for: newcomer.priority) {
            let chunks = queues[victimClass.rawValue].chunks
            // What each sender holds as the search takes from it, and where its next chunk may be.
            var held = queues[victimClass.rawValue].bytesBySender.merging(planned[victimClass.rawValue]) { $0 + $1 }
            var from: [UInt32?: Int] = [:]
            while let sender = Self.heaviest(held) {
                var position = from[sender, default: chunks.startIndex]
                while position < chunks.endIndex,
                    chunks[position].sender != sender || chunks[position].pendingCount == 0 {
                    position += 1
                }
                guard position < chunks.endIndex else {
                    // Nothing of this sender's stored that may go: the rest it holds is claimed or in this commit.
                    if sender == newcomer.sender && victimClass == newcomer.priority { return .impossible }
                    held[sender] = nil
                    continue
                }
                from[sender] = position + 1
                let chunk = chunks[position]
                if chunk.isUntouched && (need.budget - freed.budget >= chunk.accountedBytes || need.disk > freed.disk) {
                    victims.append((victimClass, position, nil))
                    freed.budget += chunk.accountedBytes
                    freed.disk += chunk.blobBytes
                    held[sender, default: 0] -= chunk.accountedBytes
                    counts[victimClass, default: 0] += chunk.count
                    if need.isMet(by: freed) { break search }
                    continue
                }
                guard chunk.lines != nil else { return .needsLines(victimClass, chunk.id) }
                for index in 0..<chunk.count where chunk.mark(index) == .pending {
                    victims.append((victimClass, position, index))
                    freed.budget += chunk.accountedBytes(of: index)
                    held[sender, default: 0] -= chunk.accountedBytes(of: index)
                    counts[victimClass, default: 0] += 1
                    if need.isMet(by: freed) { break search }
                }
                // Every pending record went; with none claimed, the chunk's row is deleted.
                if chunk.claimedCount == 0 { freed.disk += chunk.blobBytes }
                if need.isMet(by: freed) { break search }
            }
        }
        guard need.isMet(by: freed) else { return .impossible }
        var changes: [Change] = []
        for victimClass in Set(victims.map(\.priority)) {
            let ofClass = victims.filter { $0.priority == victimClass }
            for victim in ofClass where victim.index == nil {
                changes.append(settleWholeChunk(at: victim.position, victimClass))
            }
            let records = ofClass.compactMap { victim in victim.index.map { (victim.position, $0) } }
            for (position, run) in Self.runs(records) {
                changes.append(setMarks(.settled, of: run, chunkAt: position, victimClass, from: .pending))
            }
        }
        return .evicted(changes, counts: counts, freed: freed)
    }

    /// The sender holding the most of `held`; of two holding as much, the one with the lower uid (unknown first),
    /// so that eviction does not depend on a dictionary's order.
    private static func heaviest(_ held: [UInt32?: Int]) -> UInt32?? {
        func order(_ sender: UInt32?) -> Int64 { sender.map(Int64.init) ?? -1 }
        return held.max { lhs, rhs in
            lhs.value != rhs.value ? lhs.value < rhs.value : order(lhs.key) > order(rhs.key)
        }.map(\.key)
    }
}
