import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

/// Issue 40, point 1: a record's id is given when it enters the spool and is the same on every attempt.
@Suite("Record ids")
struct RecordIDTests {
    @Test("an id is the spool's instance, the class and the sequence; an instance reads back from its text")
    func idText() throws {
        let instance = SpoolInstance(high: 0x0123_4567_89ab_cdef, low: 0x0000_0000_0000_002a)
        let ids = RecordIDs(instance: instance, priority: .error, sequences: [7, 4711])
        #expect(ids[1] == "0123456789abcdef000000000000002a-error-4711")
        #expect(SpoolInstance(hex: instance.description) == instance)
        #expect(SpoolInstance(hex: "0123456789ABCDEF000000000000002A") == nil, "upper case is not how it is stored")
        #expect(SpoolInstance(hex: "0123") == nil && SpoolInstance(hex: String(repeating: "g", count: 32)) == nil)
        #expect(SpoolInstance.random() != SpoolInstance.random())
    }

    @Test("Idempotency-Key: the same for the same records, different for each half and for other records")
    func idempotencyKey() {
        let records = (10..<20).map { SpooledRecord(sequence: Int64($0), line: Array("r\($0)".utf8)[...]) }
        let batch = Batch(priority: .info, records: records, number: 3, instance: RecordIDs.testInstance)
        let again = Batch(priority: .info, records: records, number: 9, instance: RecordIDs.testInstance)
        #expect(batch.ids.idempotencyKey == again.ids.idempotencyKey, "the same records, whatever the claim")
        let (first, second) = batch.halves()
        let keys = [batch.ids.idempotencyKey, first.ids.idempotencyKey, second.ids.idempotencyKey]
        #expect(Set(keys).count == 3)
        // Same ends and count, a different record between.
        var gap = records
        gap[5].sequence = 100
        #expect(Batch(priority: .info, records: gap, instance: RecordIDs.testInstance).ids.idempotencyKey != keys[0])
        let other = Batch(priority: .info, records: records, instance: .random())
        #expect(other.ids.idempotencyKey != keys[0], "another spool's records")
    }

    @Test("a claim, its halves, a claim after a requeue from the dead letters and one after reopening: the same ids")
    func idsAreKept() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        var spool = try await SpoolKind.sqlite.make(path: path)
        _ = try await spool.append((0..<6).map { entry(.error, "e\($0)") })
        let claimed = try await claimBatch(spool, .error)
        let ids = (0..<6).map { claimed.ids[$0] }
        let (first, second) = claimed.halves()
        #expect((0..<3).map { first.ids[$0] } + (0..<3).map { second.ids[$0] } == ids, "a split keeps every id")

        try await spool.settle(first, .deadLetter(DeliveryFailure(status: 400, reason: "refused")))
        try await spool.settle(second, .putBack)
        #expect(try await spool.requeueDeadLetters(.all) == 3)
        let requeued = try await claimBatch(spool, .error)
        #expect(messages(requeued) == (0..<6).map { "e\($0)" })
        #expect((0..<6).map { requeued.ids[$0] } == ids, "a requeued dead letter has its id again")
        try await spool.settle(requeued, .putBack)
        await spool.close()

        spool = try await SpoolKind.sqlite.make(path: path)
        let reopened = try await claimBatch(spool, .error)
        #expect((0..<6).map { reopened.ids[$0] } == ids, "the same ids after a restart")
        await spool.close()
    }

    @Test("a sequence is never given twice in one instance; an emptied spool starts a new instance")
    func sequencesAreNotReused() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        var spool = try await SpoolKind.sqlite.make(path: path)
        // Two senders: two chunks, the newer one the last of its class.
        _ = try await spool.append(
            (0..<4).map { SpoolEntry(priority: .info, line: Array("i\($0)".utf8), sender: $0 < 2 ? 1 : 2) })
        let older = try await claimBatch(spool, .info, maxRecords: 2)
        let newer = try await claimBatch(spool, .info, maxRecords: 2)
        // The newer chunk is delivered and deleted; the older is still in flight when the daemon dies.
        try await spool.acknowledge(newer)
        await spool.close()

        spool = try await SpoolKind.sqlite.make(path: path)
        _ = try await spool.append([entry(.info, "after the restart")])
        let batch = try await claimBatch(spool, .info)
        #expect(messages(batch) == ["i0", "i1", "after the restart"])
        #expect(batch.instance == older.instance)
        #expect(batch.records.map(\.sequence) == older.records.map(\.sequence) + [newer.records.last!.sequence + 1],
                "not the sequence of a record the receiver has taken")
        try await spool.acknowledge(batch)
        await spool.close()

        spool = try await SpoolKind.sqlite.make(path: path)
        _ = try await spool.append([entry(.info, "in an empty spool")])
        let fresh = try await claimBatch(spool, .info)
        #expect(fresh.instance != older.instance, "sequences start again, under a new instance")
        await spool.close()
    }
}
