import Foundation
import LogShip
import Testing

/// The real `logshipd` binary on a SQLite spool, stopped hard and gently.
@Suite("Crash recovery", .serialized)
struct CrashRecoveryTests {
    @Test("kill -9 during a flood of 50 000 logctl send records: every acknowledged record arrives after a restart")
    func killDuringFlood() async throws {
        let receiver = try await TestReceiver(behavior: .init(delay: .milliseconds(50)))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url)
        var daemon = try await LogshipdProcess.start(directory: directory)

        // 50 senders of 1 000 lines each, five at a time; the daemon dies while they run.
        var acknowledged: [Int] = []
        var failed: [Int] = []
        let socket = "\(directory)/control.sock"
        try await withThrowingTaskGroup(of: (sender: Int, status: Int32).self) { group in
            func launch(_ sender: Int) {
                group.addTask {
                    let lines = (0..<1000).map { "sender \(sender) line \($0)" }.joined(separator: "\n") + "\n"
                    let result = try await run(Binaries.logctl, ["send", "--socket", socket], stdin: Data(lines.utf8))
                    return (sender, result.status)
                }
            }
            var next = 0
            while next < 5 {
                launch(next)
                next += 1
            }
            var killed = false
            while let (sender, status) = try await group.next() {
                if status == 0 { acknowledged.append(sender) } else { failed.append(sender) }
                if !killed && acknowledged.count >= 20 {
                    daemon.signal(SIGKILL)
                    killed = true
                }
                if next < 50 {
                    launch(next)
                    next += 1
                }
            }
        }
        let killResult = try await daemon.wait()
        #expect(killResult.status != 0)
        let receivedBeforeRestart = receiver.records.count
        let senders = acknowledged
        #expect(senders.count >= 20)
        #expect(!failed.isEmpty, "senders after the kill found no daemon")

        daemon = try await LogshipdProcess.start(directory: directory)
        let expected = Set(senders.flatMap { sender in (0..<1000).map { "sender \(sender) line \($0)" } })
        try await receiver.waitUntil(within: .seconds(120)) { requests in
            expected.isSubset(of: Set(requests.flatMap(\.records).map(\.message)))
        }
        let received = receiver.records.map(\.message)
        let duplicates = received.count - Set(received).count
        print("kill -9 recovery: \(expected.count) acknowledged records all delivered; "
            + "\(received.count - receivedBeforeRestart) after the restart; \(duplicates) duplicates")
        #expect(received.count > receivedBeforeRestart, "the restart delivered what the spool kept")
        #expect(duplicates <= 2 * 500, "duplicates are bounded by what was in flight (2 requests of 500)")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("SIGTERM with a request in flight past the shutdown timeout: exit 0, and the batch is sent after a restart")
    func gentleStopKeepsBatch() async throws {
        let slow = try await TestReceiver(behavior: .init(delay: .seconds(30)))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: slow.url, upload: ["shutdown_timeout: 1s"])
        var daemon = try await LogshipdProcess.start(directory: directory)
        let sent = try await run(
            Binaries.logctl, ["send", "--socket", "\(directory)/control.sock", "--priority", "error", "kept across a stop"])
        #expect(sent.status == 0, "\(sent.standardError)")
        try await slow.waitFor(records: 1)

        let signalled = ContinuousClock.now
        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait()
        #expect(stopped.status == 0, "\(stopped.standardError)")
        #expect(ContinuousClock.now - signalled < .seconds(10), "the 1 s shutdown timeout bounds the stop")

        let fast = try await TestReceiver()
        try LogshipdProcess.configure(directory: directory, url: fast.url, upload: ["shutdown_timeout: 1s"])
        daemon = try await LogshipdProcess.start(directory: directory)
        try await fast.waitFor(records: 1)
        #expect(fast.records.map(\.message) == ["kept across a stop"])
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }
}
