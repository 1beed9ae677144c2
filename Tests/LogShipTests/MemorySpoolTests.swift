import Foundation
import Testing

@testable import LogShip

@Suite("In-memory spool")
struct MemorySpoolTests {
    let limits = BatchLimits(maxRecords: 100, maxBytes: 1 << 20)

    func entry(_ priority: PriorityClass, _ text: String, size: Int = 0) -> SpoolEntry {
        SpoolEntry(priority: priority, line: Array(text.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: size))
    }

    func messages(_ batch: Batch) -> [String] {
        batch.records.map { String(decoding: $0.line, as: UTF8.self).trimmingCharacters(in: .whitespaces) }
    }

    func claimBatch(_ spool: MemorySpool, _ priority: PriorityClass, limits: BatchLimits? = nil) async throws -> Batch {
        guard case .batch(let batch, _) = try await spool.claim(priority, limits: limits ?? self.limits) else {
            throw WaitTimeout(description: "no batch of \(priority)")
        }
        return batch
    }

    @Test("claims keep arrival order within a class and never mix classes")
    func orderPerClass() async throws {
        let spool = MemorySpool(maximumBytes: 1 << 20)
        _ = try await spool.append([entry(.info, "i1"), entry(.crash, "c1"), entry(.info, "i2"), entry(.crash, "c2")])
        #expect(messages(try await claimBatch(spool, .crash)) == ["c1", "c2"])
        #expect(messages(try await claimBatch(spool, .info)) == ["i1", "i2"])
        #expect(try await spool.claim(.info, limits: limits) == .empty)
        #expect(try await spool.pendingClasses().isEmpty)
    }

    @Test("a claim stops at the record and byte limits and says whether more is ready")
    func limitsAndMoreReady() async throws {
        let spool = MemorySpool(maximumBytes: 1 << 20)
        _ = try await spool.append((0..<5).map { entry(.info, "r\($0)", size: 98) })
        guard case .batch(let first, let more) = try await spool.claim(.info, limits: BatchLimits(maxRecords: 3, maxBytes: 1 << 20)) else {
            Issue.record("expected a batch")
            return
        }
        #expect(first.records.count == 3 && more)
        guard case .batch(let second, let moreAfter) = try await spool.claim(.info, limits: BatchLimits(maxRecords: 10, maxBytes: 150)) else {
            Issue.record("expected a batch")
            return
        }
        #expect(second.records.count == 1 && moreAfter, "each line is 101 bytes with its newline")
    }

    @Test("a released batch goes back before later records and waits for its retry time")
    func releaseKeepsOrder() async throws {
        let spool = MemorySpool(maximumBytes: 1 << 20)
        _ = try await spool.append((1...4).map { entry(.error, "e\($0)") })
        let first = try await claimBatch(spool, .error, limits: BatchLimits(maxRecords: 2, maxBytes: 1 << 20))
        let second = try await claimBatch(spool, .error, limits: BatchLimits(maxRecords: 1, maxBytes: 1 << 20))
        try await spool.release(second, retryAt: Date(timeIntervalSinceNow: -1))
        try await spool.release(first, retryAt: Date(timeIntervalSinceNow: 3600))
        guard case .waiting(let until) = try await spool.claim(.error, limits: limits) else {
            Issue.record("the head waits for its retry time, and nothing of the class may pass it")
            return
        }
        #expect(until > Date())
        let stats = await spool.statistics()
        #expect(stats.pending[.error] == 4 && stats.claimed == 0)
    }

    @Test("acknowledging frees the bytes; a batch cannot be settled twice")
    func acknowledge() async throws {
        let spool = MemorySpool(maximumBytes: 1 << 20)
        _ = try await spool.append([entry(.warning, "w")])
        let batch = try await claimBatch(spool, .warning)
        #expect(await spool.statistics().bytes > 0)
        try await spool.acknowledge(batch)
        #expect(await spool.statistics().bytes == 0)
        await #expect(throws: SpoolError.self) { try await spool.acknowledge(batch) }
    }

    @Test("when full, the lowest class goes first, oldest first, and crash records are never evicted")
    func eviction() async throws {
        let recordSize = 100 + MemorySpool.entryOverhead
        let spool = MemorySpool(maximumBytes: 4 * recordSize)
        _ = try await spool.append([entry(.debug, "d1", size: 98), entry(.info, "i1", size: 98), entry(.debug, "d2", size: 98), entry(.crash, "c1", size: 98)])
        let receipt = try await spool.append([entry(.error, "e1", size: 98), entry(.crash, "c2", size: 98)])
        #expect(receipt == AppendReceipt(accepted: 2, evicted: 2))
        #expect(messages(try await claimBatch(spool, .info)) == ["i1"])
        #expect(try await spool.claim(.debug, limits: limits) == .empty)

        let lower = try await spool.append([entry(.debug, "d3", size: 98)])
        #expect(lower == AppendReceipt(accepted: 0, evicted: 1), "a debug record never pushes out an error")
        #expect(await spool.statistics().evicted == 3)
    }

    @Test("a crash record that finds only crash records is refused, loudly")
    func crashRefused() async throws {
        let recordSize = 100 + MemorySpool.entryOverhead
        let spool = MemorySpool(maximumBytes: 2 * recordSize)
        _ = try await spool.append([entry(.crash, "c1", size: 98), entry(.crash, "c2", size: 98)])
        let receipt = try await spool.append([entry(.crash, "c3", size: 98)])
        #expect(receipt == AppendReceipt(accepted: 0, evicted: 0, refused: 1))
        #expect(await spool.statistics().refused == 1)
        #expect(messages(try await claimBatch(spool, .crash)) == ["c1", "c2"])
    }
}
