import Foundation
import Testing

@testable import LogShip

/// The ledger alone, its lines in memory as the memory spool keeps them: every decision without a spool around it.
@Suite("SpoolLedger")
struct SpoolLedgerTests {
    /// A record accounted at 100 bytes: its 36-byte line plus ``SpoolEntry/overhead``.
    static func record(_ priority: PriorityClass, _ text: String, sender: UInt32? = nil) -> SpoolEntry {
        let line = Array(text.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 36 - text.utf8.count)
        return SpoolEntry(priority: priority, line: line, sender: sender)
    }

    static let recordSize = 36 + SpoolEntry.overhead

    @Test("planned records are pending only once their writes are applied, each class in arrival order")
    func planThenApply() throws {
        var ledger = SpoolLedger.inMemory()
        let plan = try ledger.plan([Self.record(.info, "i1"), Self.record(.error, "e1"), Self.record(.info, "i2")])
        #expect(plan.classes == [.info, .error])
        #expect(plan.receipts == [AppendReceipt(accepted: 3)])
        #expect(ledger.statistics().pending[.info] == 0, "planned, not yet committed")

        ledger.apply(plan.writes)
        #expect(ledger.statistics().pending[.info] == 2 && ledger.statistics().pending[.error] == 1)
        #expect(ledger.arrivalMark().sequences[.info] == 2)
        #expect(try ledger.claimed(.info).texts == ["i1", "i2"])
    }

    @Test("a full ledger evicts the lowest class first, and in it the heaviest sender's records, not the oldest")
    func evictionOrder() throws {
        var ledger = SpoolLedger.inMemory()
        let budget = 5 * Self.recordSize
        try ledger.store([Self.record(.debug, "quiet", sender: 1)], maximumBytes: budget)
        try ledger.store(
            [Self.record(.debug, "noisy1", sender: 2), Self.record(.debug, "noisy2", sender: 2)], maximumBytes: budget)
        try ledger.store([Self.record(.info, "info", sender: 3), Self.record(.crash, "crash")], maximumBytes: budget)

        let receipt = try ledger.store([Self.record(.warning, "w", sender: 4)], maximumBytes: budget)
        #expect(receipt == AppendReceipt(accepted: 1, evicted: 1))
        #expect(try ledger.claimed(.debug).texts == ["quiet", "noisy2"], "sender 2 held the most debug bytes")
        #expect(try ledger.claimed(.info).texts == ["info"], "info is above debug")
        #expect(ledger.statistics().evicted == 1)
    }

    @Test("crash records are never evicted: a crash record finding only crash records is refused, an error record too")
    func crashIsNeverEvicted() throws {
        var ledger = SpoolLedger.inMemory()
        let budget = 2 * Self.recordSize
        try ledger.store([Self.record(.crash, "c1"), Self.record(.crash, "c2")], maximumBytes: budget)

        #expect(try ledger.store([Self.record(.crash, "c3")], maximumBytes: budget)
            == AppendReceipt(refused: 1, refusal: .fullOfCrashRecords(budget: budget)))
        #expect(try ledger.store([Self.record(.error, "e")], maximumBytes: budget)
            == AppendReceipt(refused: 1, refusal: .full(budget: budget)))
        #expect(try ledger.claimed(.crash).texts == ["c1", "c2"])
        #expect(ledger.statistics().refused == 2 && ledger.statistics().evicted == 0)
    }

    @Test("""
        on a short disk, what may evict nothing is refused with the disk named, a socket's group waits from its first \
        entry without room, and a crash record evicts error records
        """)
    func shortDisk() throws {
        var ledger = SpoolLedger.inMemory()
        try ledger.store([Self.record(.error, "e1"), Self.record(.error, "e2")])
        let disk = SpoolLedger.DiskRoom(bytes: Self.recordSize / 2, free: 1_000, keptFree: 2_000)
        func plan(_ group: SpoolAppend) -> SpoolLedger.AppendPlan? {
            guard case .plan(let plan) = ledger.planAppend([group], maximumBytes: 1 << 30, disk: disk) else {
                return nil
            }
            return plan
        }

        let info = try #require(plan(SpoolAppend(entries: [Self.record(.info, "i")])))
        #expect(info.receipts == [AppendReceipt(refused: 1, refusal: .disk(free: 1_000, keptFree: 2_000))])
        #expect(info.room.refused == [.disk(free: 1_000, keptFree: 2_000): 1] && info.waiting.isEmpty)
        #expect("\(SpoolRefusal.disk(free: 1_000, keptFree: 2_000))".hasPrefix("the disk holding the spool has"))

        let roomForOne = SpoolLedger.DiskRoom(
            bytes: Self.recordSize + Self.recordSize / 2, free: 1_000, keptFree: 2_000)
        let socket = SpoolAppend(entries: [Self.record(.info, "i1"), Self.record(.info, "i2")], waitsForRoom: true)
        guard case .plan(let waiting) = ledger.planAppend([socket], maximumBytes: 1 << 30, disk: roomForOne)
        else { Issue.record("planned no append"); return }
        #expect(waiting.receipts == [AppendReceipt(accepted: 1)] && waiting.room.refused.isEmpty)
        #expect(waiting.waiting[0]?.entries.map(\.line) == [Self.record(.info, "i2").line])

        let crash = try #require(plan(SpoolAppend(entries: [Self.record(.crash, "c")])))
        #expect(crash.receipts.first?.accepted == 1 && crash.receipts.first?.evicted ?? 0 > 0, "\(crash.receipts)")
        #expect(crash.room.evicted[.disk]?[.error] == crash.receipts.first?.evicted)
    }

    @Test("a group that may not evict is left out whole when it does not fit")
    func groupThatMayNotEvict() throws {
        var ledger = SpoolLedger.inMemory()
        let budget = 3 * Self.recordSize
        try ledger.store([Self.record(.debug, "d1"), Self.record(.debug, "d2")], maximumBytes: budget)

        let receipt = try ledger.store(
            [Self.record(.info, "i1"), Self.record(.info, "i2")], maximumBytes: budget, evicting: false)
        #expect(receipt == AppendReceipt(deferred: 2))
        #expect(ledger.statistics().pending[.info] == 0 && ledger.statistics().pending[.debug] == 2)
    }

    @Test("claims take the oldest ready records up to the limits, number the batches, and skip what is claimed")
    func claims() throws {
        var ledger = SpoolLedger.inMemory()
        try ledger.store((1...5).map { Self.record(.info, "i\($0)") })

        let first = try ledger.claimed(.info, maxRecords: 2)
        let second = try ledger.claimed(.info, maxRecords: 2)
        #expect(first.texts == ["i1", "i2"] && first.number == 1)
        #expect(second.texts == ["i3", "i4"] && second.number == 2)
        #expect(ledger.statistics().claimed == 4 && ledger.statistics().pending[.info] == 1)
        #expect(try ledger.claimed(.info, maxRecords: 2, maxBytes: 1).texts == ["i5"], "one record even over the bytes")
        #expect(ledger.claimResult(.info) == .empty)
    }

    @Test("an unclaimed batch goes back to its place, ahead of the records claimed after it")
    func unclaimKeepsPlace() throws {
        var ledger = SpoolLedger.inMemory()
        try ledger.store((1...4).map { Self.record(.info, "i\($0)") })
        let head = try ledger.claimed(.info, maxRecords: 2)
        let middle = try ledger.claimed(.info, maxRecords: 1)

        ledger.unclaim(head)
        #expect(ledger.statistics().claimed == 1 && ledger.statistics().pending[.info] == 3)
        #expect(try ledger.claimed(.info).texts == ["i1", "i2", "i4"], "i3 is still claimed")
        ledger.unclaim(middle)
        #expect(try ledger.claimed(.info).texts == ["i3"])
    }

    @Test("unclaiming gives back only what is still claimed")
    func unclaimLeavesSettledRecords() throws {
        var ledger = SpoolLedger.inMemory()
        try ledger.store((1...3).map { Self.record(.info, "i\($0)") })
        let batch = try ledger.claimed(.info)
        let delivered = ledger.settle([Batch(priority: .info, records: [batch.records[0]], instance: batch.instance)])
        ledger.apply(delivered.writes)

        ledger.unclaim(batch)
        #expect(ledger.statistics().pending[.info] == 2 && ledger.statistics().claimed == 0)
        #expect(try ledger.claimed(.info).texts == ["i2", "i3"])
    }

    @Test("settling part of a chunk writes its settled runs, settling the rest deletes it; a failed write reverts")
    func settling() throws {
        var ledger = SpoolLedger.inMemory()
        try ledger.store((1...4).map { Self.record(.info, "i\($0)") })
        let batch = try ledger.claimed(.info)
        let chunkID = ledger.queues[PriorityClass.info.rawValue].chunks[0].id
        let (first, second) = batch.halves()

        let failed = ledger.settle([first])
        #expect(ledger.statistics().bytes == 2 * Self.recordSize, "settled records stop counting at once")
        ledger.revert(failed.changes)
        #expect(ledger.statistics().bytes == 4 * Self.recordSize && ledger.statistics().claimed == 4)

        let part = ledger.settle([first])
        #expect(part.writes.settledRuns[chunkID] == [0..<2] && part.writes.deletions.isEmpty)
        #expect(part.settled.map(\.sequence) == [1, 2])
        ledger.apply(part.writes)
        let rest = ledger.settle([second])
        #expect(rest.writes.deletions.map(\.id) == [chunkID])
        ledger.apply(rest.writes)
        #expect(ledger.queues[PriorityClass.info.rawValue].chunks.isEmpty && ledger.holdsNoRecords)
        #expect(ledger.settle([batch]).settled.isEmpty, "nothing is settled twice")
    }

    @Test("dead letters hold a quarter of the budget: beyond it the oldest give way, counted as evicted")
    func deadLetterShare() throws {
        var ledger = SpoolLedger.inMemory()
        let budget = 8 * Self.recordSize
        try ledger.store((1...4).map { Self.record(.debug, "d\($0)") }, maximumBytes: budget)

        for expectedExcess in [0, 0, Self.recordSize] {
            let batch = try ledger.claimed(.debug, maxRecords: 1)
            let plan = ledger.planDeadLetters(batch, maximumBytes: budget)
            #expect(plan.excess == expectedExcess && plan.letters.count == 1)
            ledger.apply(plan.writes)
            let trimmed = plan.excess > 0 ? (count: 1, lineBytes: 36) : (count: 0, lineBytes: 0)
            ledger.countDeadLetters(added: plan.letters, trimmed: trimmed)
        }
        let statistics = ledger.statistics()
        #expect(statistics.deadLetters == 2 && statistics.deadLetterBytes == 2 * Self.recordSize)
        #expect(statistics.evicted == 1 && statistics.pending[.debug] == 1)
        #expect(statistics.bytes == 3 * Self.recordSize, "dead letters count against the budget")
    }

    @Test("a requeued dead letter is pending again at its place, before the records that came after it")
    func requeue() throws {
        var ledger = SpoolLedger.inMemory()
        try ledger.store((1...3).map { Self.record(.info, "i\($0)") })
        let batch = try ledger.claimed(.info)
        let refused = Batch(priority: .info, records: [batch.records[0]], instance: batch.instance)
        ledger.unclaim(Batch(priority: .info, records: Array(batch.records.dropFirst()), instance: batch.instance))
        let plan = ledger.planDeadLetters(refused, maximumBytes: 1 << 30)
        ledger.apply(plan.writes)
        ledger.countDeadLetters(added: plan.letters, trimmed: (0, 0))
        #expect(ledger.statistics().deadLetters == 1 && ledger.statistics().pending[.info] == 2)

        let letters = plan.letters.map {
            SpoolLedger.RequeuedLetter(priority: .info, sequence: $0.sequence, line: Array($0.line))
        }
        let (writes, changes) = ledger.requeue(letters)
        ledger.apply(writes)
        ledger.markRequeued(changes, letters: letters)
        #expect(ledger.statistics().deadLetters == 0 && ledger.statistics().deadLetterBytes == 0)
        #expect(try ledger.claimed(.info).texts == ["i1", "i2", "i3"])
    }
}

struct LedgerStepError: Error, CustomStringConvertible {
    var description: String
}

extension SpoolLedger {
    /// A ledger keeping every chunk's lines, as the memory spool's.
    static func inMemory() -> SpoolLedger {
        SpoolLedger(cacheBudget: .init(delivering: .max, stalled: .max), instance: .random())
    }

    /// Plans `entries` as one group; the disk is no limit.
    mutating func plan(
        _ entries: [SpoolEntry], maximumBytes: Int = 1 << 30, evicting: Bool = true
    ) throws -> AppendPlan {
        let group = SpoolAppend(entries: entries, position: nil, evicting: evicting)
        guard case .plan(let plan) = planAppend([group], maximumBytes: maximumBytes, disk: .unlimited) else {
            throw LedgerStepError(description: "a plan asked for lines the ledger holds")
        }
        return plan
    }

    /// Plans `entries` as one group and applies the plan at once, as the memory spool does.
    @discardableResult
    mutating func store(
        _ entries: [SpoolEntry], maximumBytes: Int = 1 << 30, evicting: Bool = true
    ) throws -> AppendReceipt {
        let plan = try plan(entries, maximumBytes: maximumBytes, evicting: evicting)
        apply(plan.writes)
        count(plan.receipts)
        return plan.receipts[0]
    }

    mutating func claimResult(
        _ priority: PriorityClass, maxRecords: Int = 100, maxBytes: Int = 1 << 20
    ) -> ClaimResult? {
        guard case .done(let result) = claim(priority, limits: BatchLimits(maxRecords: maxRecords, maxBytes: maxBytes))
        else { return nil }
        return result
    }

    /// Claims a batch of `priority`; throws when the claim finds none.
    mutating func claimed(
        _ priority: PriorityClass, maxRecords: Int = 100, maxBytes: Int = 1 << 20
    ) throws -> Batch {
        guard case .batch(let batch, _) = claimResult(priority, maxRecords: maxRecords, maxBytes: maxBytes)
        else { throw LedgerStepError(description: "no batch of \(priority)") }
        return batch
    }
}

extension Batch {
    /// The records' lines without their padding.
    var texts: [String] {
        records.map { String(decoding: $0.line, as: UTF8.self).trimmingCharacters(in: .whitespaces) }
    }
}
