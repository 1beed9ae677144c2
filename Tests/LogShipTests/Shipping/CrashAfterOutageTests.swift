import Foundation
import LogShip
import LogShipTestKit
import Synchronization
import Testing

/// A crash report that arrives while the remote is down does not wait out the backoff the rest waits out.
@Suite("Crash reports after an outage", .serialized)
struct CrashAfterOutageTests {
    @Test("""
        a crash record sent during an outage leaves within about a second of the remote's return, ahead of the backlog \
        that waits out the backoff
        """)
    func crashLeavesSoonAfterTheRemoteReturns() async throws {
        let isDown = Mutex(true)
        let receiver = try await TestReceiver(behavior: .init(decide: { _, _ in isDown.withLock { $0 } ? 503 : nil }))
        let daemon = try await TestDaemon.start(receiver: receiver) {
            // A backoff far longer than the test: the backlog can only leave before it ends through the probe.
            $0.upload.retryInitial = .seconds(120)
            $0.upload.retryMax = .seconds(120)
        }

        try await daemon.send(count: 20, priority: "info", prefix: "backlog")
        // Paused by the failing remote.
        try await waitUntil { daemon.daemon.shipper.statistics.pause != nil }
        try await daemon.send(count: 1, priority: "crash", prefix: "segfault")
        // The crash record probes the remote while it is down, each probe refused.
        try await receiver.waitUntil(within: .seconds(30)) { requests in
            requests.filter { $0.status == 503 && $0.records.contains { $0.message == "segfault 0" } }.count >= 2
        }

        let back = ContinuousClock.now
        isDown.withLock { $0 = false }
        try await receiver.waitUntil(within: .seconds(30)) { requests in
            requests.contains { $0.status == 200 && $0.records.contains { $0.message == "segfault 0" } }
        }
        let accepted = receiver.requests.filter { $0.status == 200 }
        let crashRequest = try #require(accepted.first { $0.records.contains { $0.message == "segfault 0" } })
        #expect(
            accepted.first?.sequence == crashRequest.sequence,
            "the crash record went first; the backlog waits out its pause (\(accepted.map(\.records.count)))")
        // The probe's delivery ends the pause (its answer reaches the shipper a moment after the receiver logs it).
        try await waitUntil { daemon.daemon.shipper.statistics.pause == nil }
        let delay = crashRequest.arrivedAt - back
        print("crash record accepted \(delay) after the remote came back (probes every 0.5–1 s)")
        try await daemon.stop()
    }

    @Test(
        "after a probe ends the outage, the error records the outage put back leave before info that was never claimed"
    )
    func putBackRecordsKeepTheirPlace() async throws {
        let isDown = Mutex(true)
        let receiver = try await TestReceiver(behavior: .init(decide: { _, _ in isDown.withLock { $0 } ? 503 : nil }))
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.retryInitial = .seconds(120)
            $0.upload.retryMax = .seconds(120)
            // One slot: after the outage the queue starts exactly one operation at a time, in class order.
            $0.upload.maxInFlight = 1
        }
        try await daemon.send(count: 5, priority: "error", prefix: "failed once")
        // Claimed, refused, put back: the outage's pause holds them.
        try await waitUntil { daemon.daemon.shipper.statistics.pause != nil }
        try await daemon.send(count: 5, priority: "info", prefix: "never claimed")
        try await daemon.send(count: 1, priority: "crash", prefix: "segfault")
        try await receiver.waitUntil(within: .seconds(30)) { requests in
            requests.contains { $0.status == 503 && $0.records.contains { $0.message == "segfault 0" } }
        }
        isDown.withLock { $0 = false }
        try await receiver.waitUntil(within: .seconds(180)) { requests in
            requests.filter { $0.status == 200 }.reduce(0) { $0 + $1.recordCount } == 11
        }
        let order = receiver.requests.filter { $0.status == 200 }.sorted { $0.batch! < $1.batch! }
            .flatMap { $0.records.map(\.message) }
        #expect(order.first == "segfault 0")
        #expect(order.dropFirst().prefix(5).allSatisfy { $0.hasPrefix("failed once") }, "\(order)")
        try await daemon.stop()
    }
}
