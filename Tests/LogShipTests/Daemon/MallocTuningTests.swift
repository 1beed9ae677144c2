import Foundation
import LogShipTestKit
import Synchronization
import Testing

@testable import LogShip

/// How the daemon asks glibc's allocator to hold memory: one arena, and freed memory given back once the spool
/// has emptied.
@Suite("Malloc tuning")
struct MallocTuningTests {
    /// glibc's arenas other than the main one in process `pid`: each is a heap mapped at a multiple of its
    /// maximum size (64 MiB), its used part read-write and the rest of the 64 MiB reserved without access.
    static func arenaHeaps(of pid: pid_t) throws -> Int {
        let heapSize: UInt64 = 64 << 20
        let mappings = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8).split(separator: "\n")
            .map { line -> (start: UInt64, end: UInt64, permissions: Substring, isAnonymous: Bool) in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                let bounds = fields[0].split(separator: "-").map { UInt64($0, radix: 16) ?? 0 }
                return (bounds[0], bounds[1], fields[1], fields.count < 6)
            }
        return zip(mappings, mappings.dropFirst()).filter { used, reserved in
            used.isAnonymous && used.start % heapSize == 0 && used.permissions.hasPrefix("rw")
                && reserved.isAnonymous && reserved.start == used.end && reserved.permissions.hasPrefix("---")
                && reserved.end - used.start == heapSize
        }.count
    }

    @Test(
        "logshipd allocates from glibc's main arena alone, whatever its threads do; an operator's arena limit is kept",
        arguments: [[:], ["MALLOC_ARENA_MAX": "4"], ["GLIBC_TUNABLES": "glibc.malloc.arena_max=4"]])
    func oneArena(operatorSettings: [String: String]) async throws {
        let directory = try TemporaryDirectory.make()
        let receiver = try await TestReceiver()
        try LogshipdProcess.configure(directory: directory, url: receiver.url, batchRecords: 50)
        let daemon = try await LogshipdProcess.start(directory: directory, environment: operatorSettings)
        // Records through every busy thread: the intake's event loop, the spool's writer, the upload loops.
        // Blocking writes, off the cooperative pool that every test shares.
        try await offloaded {
            let client = try UnixClient(path: "\(directory)/ingest.sock", type: .stream)
            for index in 0..<2_000 {
                try client.write("<14>Nov 21 09:59:58 arenas[1]: record \(index) of a run through every thread\n")
            }
        }
        try await receiver.waitFor(records: 2_000)
        let heaps = try Self.arenaHeaps(of: daemon.pid)
        daemon.signal(SIGTERM)
        _ = try await daemon.wait()
        if operatorSettings.isEmpty {
            #expect(heaps == 0, "arena heaps besides the main arena: \(heaps)")
        } else {
            #expect(heaps >= 1, "the operator's limit of four lets threads take arenas of their own: \(heaps)")
        }
    }

    @Test(
        "memory is given back at most once per interval, and an emptying within the interval is trimmed for at its end"
    )
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
