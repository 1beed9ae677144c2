import LogShipTestKit
import Synchronization
import Testing

@testable import LogShip

/// How the daemon gives freed memory back once the spool has emptied.
@Suite("Malloc tuning")
struct MallocTuningTests {
    @Test("memory is given back at most once per interval, and an emptying within the interval is trimmed for at its end")
    func releaseIsThrottled() async throws {
        let interval = Duration.milliseconds(500)
        let releases = Mutex<[ContinuousClock.Instant]>([])
        let throttle = ThrottledRelease(interval: interval) { releases.withLock { $0.append(.now) } }

        let requestedAt = ContinuousClock.now
        #expect(throttle.request() == .started)
        // Within the interval: neither dropped nor run at once, and however many come, one release.
        #expect(throttle.request() == .deferred)
        #expect(throttle.request() == .joined)
        try await waitUntil { releases.withLock { $0.count } == 2 }
        let second = releases.withLock { $0[1] }
        #expect(second - requestedAt >= interval, "the deferred release waited out the interval")

        // Waiting out the interval after the deferred release (the behaviour under test, not a synchronisation):
        // then a request runs at once again.
        try await Task.sleep(until: second + interval + .milliseconds(50), clock: .continuous)
        #expect(throttle.request() == .started)
        try await waitUntil { releases.withLock { $0.count } == 3 }
    }
}
