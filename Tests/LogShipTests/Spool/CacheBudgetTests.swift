import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

/// The SQLite spool's delivery cache (`spool.max_cache_bytes`), on a real file: how many bytes of lines it keeps
/// beyond those it must, and that what it lets go is read back.
@Suite("SQLite spool delivery cache")
struct CacheBudgetTests {
    /// What the spool keeps whatever the budget, in the tests' single class: its newest chunk and the next two to
    /// send (``SpoolLedger/keptHeadChunks``).
    static let keptBeyondBudget = (1 + SpoolLedger.keptHeadChunks) * SpoolLedger.maximumChunkBytes

    func open(cacheBytes: Int) async throws -> SQLiteSpool {
        try await SQLiteSpool.open(
            path: "\(try TemporaryDirectory.make())/spool.db", maximumBytes: 1 << 30, minimumFreeDiskBytes: 0,
            cacheBytes: cacheBytes, logger: .test)
    }

    /// Appends `chunks` commits of 100 info records of about 2 000 bytes: a chunk each, 200 KB of lines.
    func fill(_ spool: SQLiteSpool, chunks: Range<Int>) async throws {
        for chunk in chunks {
            _ = try await spool.append((0..<100).map { entry(.info, "c\(chunk)-\($0)", padding: 2000) })
        }
    }

    /// An error record claimed and acknowledged: the remote is taking records (``SpoolLedger/deliveringWindow``).
    func deliverOne(_ spool: SQLiteSpool) async throws {
        _ = try await spool.append([entry(.error, "delivered")])
        try await spool.acknowledge(try await claimBatch(spool, .error))
    }

    @Test(
        """
        while the remote takes records, the lines kept fill spool.max_cache_bytes and no more, beyond the newest chunk \
        and the next two to send; the rest is read back in order
        """,
        arguments: [0, 512 << 10, 4 << 20])
    func deliveringWithinBudget(budget: Int) async throws {
        let spool = try await open(cacheBytes: budget)
        // 8 MB of lines, with an acknowledgement before every chunk: ten chunks between two took longer than
        // the delivering window (5 s) in a CI run, and the spool rightly saw a remote that takes nothing.
        var slowestChunk = Duration.zero
        for chunk in 0..<40 {
            let acknowledgedAt = ContinuousClock.now
            try await deliverOne(spool)
            try await fill(spool, chunks: chunk..<(chunk + 1))
            slowestChunk = max(slowestChunk, ContinuousClock.now - acknowledgedAt)
        }
        #expect(spool.cachedLineBytes <= budget + Self.keptBeyondBudget, "lines of \(spool.cachedLineBytes) bytes kept")
        // Trimmed a chunk at a time, from the newest back: what is kept is within a chunk of the budget. Unless a
        // chunk took longer than the delivering window after its acknowledgement (a full run at load 15-30 took
        // that long): then the spool rightly trimmed to the stalled budget, and the lines it let go stay on disk.
        if slowestChunk < .seconds(SpoolLedger.deliveringWindow) {
            #expect(
                spool.cachedLineBytes > budget - SpoolLedger.maximumChunkBytes, "\(spool.cachedLineBytes) bytes kept")
        } else {
            print("cache budget \(budget): a chunk took \(slowestChunk) after its acknowledgement, more than the "
                + "delivering window; the lower bound is not checked")
        }

        var claimed: [String] = []
        let limits = BatchLimits(maxRecords: 250, maxBytes: 1 << 30)
        while case .batch(let batch, _) = try await spool.claim(.info, limits: limits) {
            claimed += messages(batch)
            try await spool.acknowledge(batch)
        }
        #expect(claimed == (0..<40).flatMap { chunk in (0..<100).map { "c\(chunk)-\($0)" } })
        #expect(spool.cachedLineBytes == 0)
        await spool.close()
    }

    @Test("while the remote takes nothing, at most 1 MiB of a larger budget is kept")
    func stalledWithinOneMiB() async throws {
        let spool = try await open(cacheBytes: 16 << 20)
        try await fill(spool, chunks: 0..<40)
        #expect(spool.cachedLineBytes <= SpoolLedger.CacheBudget.largestStalled + Self.keptBeyondBudget,
                "lines of \(spool.cachedLineBytes) bytes kept")
        await spool.close()
    }
}
