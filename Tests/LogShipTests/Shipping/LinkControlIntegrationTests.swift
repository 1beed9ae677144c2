import Foundation
import LogShip
import LogShipTestKit
import Synchronization
import Testing

/// The link's control loop against real receivers on loopback: a few failures are noise, a receiver over its
/// capacity is an overload. How fast each drains is `logshipd-bench link`'s to measure; these check what holds
/// however loaded the machine is.
@Suite("Link control, end to end", .serialized)
struct LinkControlIntegrationTests {
    /// A backlog of `count` info records spooled while uploads are paused, then let go: every batch is full.
    func drain(_ daemon: TestDaemon, count: Int) async throws {
        daemon.shipper.setPausedByOperator(true)
        try await daemon.send(count: count, priority: "info", prefix: "backlog")
        daemon.shipper.setPausedByOperator(false)
    }

    @Test(
        """
        a receiver that answers 503 to a random share of requests: every record arrives, in at most twice the requests \
        of a clean run, and the rate is never lowered
        """,
        arguments: [0.0, 0.05, 0.2])
    func randomFailures(_ share: Double) async throws {
        let daemon = try await TestDaemon.start(receiver: .init(failureRate: share, failureStatus: 503)) {
            $0.batch.maxRecords = 100
        }
        try await drain(daemon, count: 20_000)
        // Seconds on an idle machine (BENCHMARKS.md); the bound is for a machine loaded many times over.
        try await daemon.receiver.waitUntil(within: .seconds(300)) { requests in
            requests.filter { $0.status == 200 }.reduce(0) { $0 + $1.recordCount } == 20_000
        }
        let requests = daemon.receiver.requests
        let refused = requests.count { $0.status == 503 }
        // A clean run sends 200 requests of 100 records: each refusal costs one request more, nothing else does.
        #expect(requests.count <= 400, "\(requests.count) requests, \(refused) refused")
        #expect(requests.count == 200 + refused, "only the refused batches went again, whole")
        // The receiver holds a request before it answers: the daemon counts the last one a moment later.
        try await eventually { try await daemon.status().delivered == 20_000 }
        let status = try await daemon.status()
        #expect(!status.rateHeldDownByReceiver && status.rateEffective == nil, "no rate was asked for: \(status)")
        try await daemon.stop()
    }

    @Test("""
        a receiver that takes 20 000 lines a second and answers 429 above it: 100 000 records drain with at most a \
        tenth of the requests refused, and no pause
        """)
    func capacity() async throws {
        let capacity = 20_000.0
        let bucket = Mutex((level: capacity, at: ContinuousClock.now))
        let receiver = try await TestReceiver(behavior: .init { _, records in
            bucket.withLock { bucket in
                let now = ContinuousClock.now
                bucket.level = min(capacity, bucket.level + capacity * (now - bucket.at).seconds)
                bucket.at = now
                guard bucket.level >= Double(records.count) else { return 429 }
                bucket.level -= Double(records.count)
                return nil
            }
        })
        let daemon = try await TestDaemon.start(receiver: receiver) { $0.batch.maxRecords = 1000 }
        try await drain(daemon, count: 100_000)
        try await receiver.waitUntil(within: .seconds(300)) { requests in
            requests.filter { $0.status == 200 }.reduce(0) { $0 + $1.recordCount } == 100_000
        }
        let requests = receiver.requests
        let refused = requests.count { $0.status == 429 }
        #expect(Double(refused) <= Double(requests.count) / 10, "\(refused) of \(requests.count) refused")
        let status = try await daemon.status()
        #expect(status.pausedUntil == nil && status.lastFailure == nil, "slowed down, never paused: \(status)")
        try await daemon.stop()
    }
}
