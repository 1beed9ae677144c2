import Foundation
import Synchronization
import Testing

import LogShipTestKit
@testable import LogShip

/// The delivery rules against a scripted remote (an `Uploader` at the unit boundary) and a real in-memory spool.
@Suite("Batch delivery")
struct BatchDeliveryTests {
    /// Answers each request with what `answer` says about its lines; counts requests.
    final class ScriptedUploader: Uploader {
        let answer: @Sendable ([String]) async throws -> Void
        private let count = Mutex(0)

        init(_ answer: @escaping @Sendable ([String]) async throws -> Void) {
            self.answer = answer
        }

        var requests: Int { count.withLock { $0 } }

        func upload(_ payload: Payload) async throws -> Int {
            count.withLock { $0 += 1 }
            try await answer(payload.lines.map { String(decoding: $0, as: UTF8.self) })
            return payload.lines.reduce(0) { $0 + $1.count + 1 }
        }
    }

    func delivery(_ uploader: ScriptedUploader, spool: any Spool) -> BatchDelivery {
        BatchDelivery(spool: spool, uploaders: [uploader], logger: .test)
    }

    func spool(_ lines: [String], kind: SpoolKind = .memory) async throws -> any Spool & DeadLetterStore {
        let spool = try await kind.make()
        _ = try await spool.append(lines.map { SpoolEntry(priority: .info, line: Array($0.utf8)) })
        return spool
    }

    /// What a claim of `.info` and every part it leads to came to, the parts sent one after another as the
    /// shipper's machine sends them (first come, first sent).
    struct Run {
        var counts = DeliveryCounts()
        /// The outcome of each request, in order.
        var outcomes: [RequestReport.Outcome] = []

        var refusedEveryPart: Bool {
            outcomes.contains { if case .refusedEveryPart = $0 { true } else { false } }
        }
    }

    func run(_ delivery: BatchDelivery) async throws -> Run {
        let grant = UploadRateLimiter.Grant(limits: BatchLimits(maxRecords: 100, maxBytes: 1 << 20))
        var work: [OperationWork] = [.claim(.info, grant)]
        var run = Run()
        while !work.isEmpty {
            guard case .sent(let report) = await delivery.perform(work.removeFirst(), to: 0) else {
                throw WaitTimeout(description: "an operation sent nothing")
            }
            run.counts += report.counts
            run.outcomes.append(report.outcome)
            work += report.parts.map { .send($0) }
        }
        return run
    }

    @Test("an unclear 4xx for some records only: those are dead-lettered, the rest delivered")
    func unclearSome() async throws {
        let lines = (0..<16).map { $0 == 5 || $0 == 6 ? "bad \($0)" : "good \($0)" }
        let spool = try await spool(lines)
        let uploader = ScriptedUploader { lines in
            if lines.contains(where: { $0.hasPrefix("bad") }) {
                throw UploadError.status(409, responseExcerpt: "conflict")
            }
        }
        let run = try await run(delivery(uploader, spool: spool))
        #expect(run.counts.delivered == 14 && run.counts.deadLettered == 2 && !run.refusedEveryPart)
        #expect(run.counts.requests == uploader.requests && run.counts.retriedRequests == 0)
        #expect(run.counts.rejectedRequests == run.counts.failedRequests, "every refusal was the records'")
        #expect(try await spool.deadLetters(limit: 10).map(\.line) == ["bad 5", "bad 6"])
    }

    @Test("an unclear 4xx for everything: nothing dead-lettered, delivery pauses after the halves were tried")
    func unclearAll() async throws {
        let spool = try await spool((0..<100).map { "record \($0)" })
        let uploader = ScriptedUploader { _ in throw UploadError.status(409, responseExcerpt: "") }
        let run = try await run(delivery(uploader, spool: spool))
        #expect(run.counts.deadLettered == 0 && run.counts.delivered == 0)
        #expect(run.refusedEveryPart, "the endpoint refuses: the shipper pauses")
        #expect(uploader.requests == 3, "the batch, then its two halves")
        #expect(run.counts.failedRequests == 3 && run.counts.retriedRequests == 3, "none was the records' fault")
        let statistics = await spool.statistics()
        #expect(
            statistics.claimed == 0 && statistics.pending[.info] == 100, "everything is back, waiting out the pause")
    }

    @Test("two refused records at the front of a batch are isolated, not mistaken for a refusing remote")
    func unclearFront() async throws {
        let lines = (0..<16).map { $0 < 2 ? "bad \($0)" : "good \($0)" }
        let spool = try await spool(lines)
        let uploader = ScriptedUploader { lines in
            if lines.contains(where: { $0.hasPrefix("bad") }) { throw UploadError.status(409, responseExcerpt: "") }
        }
        let run = try await run(delivery(uploader, spool: spool))
        #expect(run.counts.delivered == 14 && run.counts.deadLettered == 2 && !run.refusedEveryPart)
    }

    @Test("bad records in both halves: paused the first time, split finer and isolated the next")
    func unclearBothHalves() async throws {
        let lines = (0..<16).map { $0 == 0 || $0 == 8 ? "bad \($0)" : "good \($0)" }
        let uploader = ScriptedUploader { lines in
            if lines.contains(where: { $0.hasPrefix("bad") }) { throw UploadError.status(409, responseExcerpt: "") }
        }
        let spool = try await spool(lines)
        let delivery = delivery(uploader, spool: spool)
        let paused = try await run(delivery)
        #expect(paused.refusedEveryPart && paused.counts.deadLettered == 0 && paused.counts.delivered == 0)

        // The same records again, as after the pause.
        let isolated = try await run(delivery)
        #expect(!isolated.refusedEveryPart && isolated.counts.delivered == 14 && isolated.counts.deadLettered == 2)
        #expect(try await spool.deadLetters(limit: 10).map(\.line) == ["bad 0", "bad 8"])
    }

    @Test("""
        a part of a probe sent to another endpoint (delivery moved) is a batch of its own there: one endpoint's \
        acceptance never makes the other's refusal the records' fault
        """)
    func partAfterMove() async throws {
        let spool = try await spool((0..<16).map { "record \($0)" })
        let refusing = ScriptedUploader { _ in throw UploadError.status(409, responseExcerpt: "") }
        let accepting = ScriptedUploader { _ in }
        let delivery = BatchDelivery(spool: spool, uploaders: [refusing, accepting], logger: .test)
        let grant = UploadRateLimiter.Grant(limits: BatchLimits(maxRecords: 100, maxBytes: 1 << 20))
        guard case .sent(let refusal) = await delivery.perform(.claim(.info, grant), to: 0) else {
            throw WaitTimeout(description: "the claim sent nothing")
        }
        #expect(refusal.parts.count == 2 && refusal.parts.allSatisfy { $0.endpoint == 0 }, "a probe at endpoint 0")
        _ = await delivery.perform(.send(refusal.parts[0]), to: 0)
        guard case .sent(let moved) = await delivery.perform(.send(refusal.parts[1]), to: 1) else {
            throw WaitTimeout(description: "the moved part sent nothing")
        }
        #expect(moved.counts.delivered == 8 && accepting.requests == 1)
        #expect(moved.parts.isEmpty && moved.isPutBack, "the part endpoint 0 refused goes back, undecided")

        // Delivery back at the refusing endpoint: it refuses everything, so nothing is the records' fault.
        var work: [OperationWork] = moved.parts.map { .send($0) } + [.claim(.info, grant)]
        while !work.isEmpty, case .sent(let report) = await delivery.perform(work.removeFirst(), to: 0) {
            work += report.parts.map { .send($0) }
        }
        #expect(try await spool.deadLetters(limit: 20).isEmpty, "no good record dead-lettered")
        let statistics = await spool.statistics()
        #expect(statistics.claimed == 0 && statistics.pending[.info] == 8, "the 8 endpoint 1 did not take wait")
    }

    @Test("a lone record refused with 400 is dead-lettered; one refused with an unclear 4xx pauses delivery")
    func loneRecords() async throws {
        let badRequest = try await spool(["one"])
        let refused = ScriptedUploader { _ in throw UploadError.status(400, responseExcerpt: "bad") }
        let deadLettered = try await run(delivery(refused, spool: badRequest)).counts
        #expect(
            deadLettered.deadLettered == 1 && deadLettered.rejectedRequests == 1 && deadLettered.retriedRequests == 0)

        let conflict = try await spool(["one"])
        let unclear = ScriptedUploader { _ in throw UploadError.status(409, responseExcerpt: "") }
        let run = try await run(delivery(unclear, spool: conflict))
        #expect(run.counts.deadLettered == 0 && run.refusedEveryPart)
        #expect(run.counts.retriedRequests == 1 && run.counts.rejectedRequests == 0)
        #expect(await conflict.statistics().pending[.info] == 1)
    }

    @Test("a request cancelled mid-flight puts its batch back, ready at once, even though the task is cancelled",
          arguments: SpoolKind.allCases)
    func cancelled(_ kind: SpoolKind) async throws {
        let spool = try await spool((0..<10).map { "record \($0)" }, kind: kind)
        let started = Gate()
        let uploader = ScriptedUploader { _ in
            started.open()
            // A request that never answers: it ends only when the task is cancelled.
            let (never, continuation) = AsyncStream<Void>.makeStream()
            defer { continuation.finish() }
            for await _ in never {}
            try Task.checkCancellation()
        }
        let delivery = delivery(uploader, spool: spool)
        let grant = UploadRateLimiter.Grant(limits: BatchLimits(maxRecords: 100, maxBytes: 1 << 20))
        let task = Task { await delivery.perform(.claim(.info, grant), to: 0) }
        await started.wait()
        task.cancel()
        guard case .cancelledInFlight = await task.value else {
            Issue.record("not reported as cancelled")
            return
        }
        let statistics = await spool.statistics()
        #expect(statistics.claimed == 0 && statistics.pending[.info] == 10)
        guard case .batch(let batch, _) = try await spool.claim(
            .info, limits: BatchLimits(maxRecords: 100, maxBytes: 1 << 20))
        else { Issue.record("the batch is not ready again"); return }
        #expect(batch.records.count == 10)
    }
}
