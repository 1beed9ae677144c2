import Foundation
import LogShip
import LogShipTestKit
import Synchronization
import Testing

/// A crash report that arrives while the remote is down does not wait out the backoff the rest waits out.
@Suite("Crash reports after an outage", .serialized)
struct CrashAfterOutageTests {
    @Test("a crash record sent during an outage leaves within about a second of the remote's return, ahead of the backlog that waits out the backoff")
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
}
