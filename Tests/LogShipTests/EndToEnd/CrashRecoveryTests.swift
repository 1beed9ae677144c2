import Foundation
import LogShip
import Testing
import LogShipTestKit

/// The real `logshipd` binary on a SQLite spool, stopped hard and gently.
@Suite("Crash recovery", .serialized)
struct CrashRecoveryTests {
    @Test("kill -9 during a flood of 50 000 logctl send records: every acknowledged record arrives after a restart")
    func killDuringFlood() async throws {
        // The first four requests are answered; later ones are held until the daemon is dead, so the spool
        // holds most of what was acknowledged when it dies, however fast this machine delivers.
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(hold: { sequence in
            if sequence >= 4 { await gate.wait() }
        }))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url, upload: ["timeout: 10m"])
        var daemon = try await LogshipdProcess.start(directory: directory)

        // 50 senders of 1 000 lines each, five at a time; the daemon dies while they run, at a moment the test
        // knows: both slots hold a request and the four answered ones are acknowledged (none of their records is
        // still claimed), so exactly the held records are in flight, however slow this machine is.
        var heldAtKill = 0
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
                    heldAtKill = try await LogshipdProcess.waitUntilOnlyHeldClaimed(
                        directory: directory, receiver: receiver, requests: 6, firstHeld: 4)
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
        let deliveredBeforeKill = Set(receiver.requests.filter { $0.sequence < 4 }.flatMap(\.records).map(\.message))
        gate.open()
        let senders = acknowledged
        #expect(senders.count >= 20)
        #expect(!failed.isEmpty, "senders after the kill found no daemon")

        daemon = try await LogshipdProcess.start(directory: directory)
        let expected = Set(senders.flatMap { sender in (0..<1000).map { "sender \(sender) line \($0)" } })
        try await receiver.waitUntil(within: .seconds(300)) { requests in
            expected.isSubset(of: Set(requests.flatMap(\.records).map(\.message)))
        }
        let received = receiver.records.map(\.message)
        let duplicates = received.count - Set(received).count
        print("kill -9 recovery: \(expected.count) acknowledged records all delivered; "
            + "\(received.count - receivedBeforeRestart) after the restart; \(duplicates) duplicates")
        let afterRestart = Set(receiver.records.dropFirst(receivedBeforeRestart).map(\.message))
        #expect(
            expected.subtracting(deliveredBeforeKill).isSubset(of: afterRestart),
            "every acknowledged record the remote had not taken came from the spool after the restart")
        #expect(duplicates == heldAtKill, "the only repeats are the records of the requests in flight")
        #expect(heldAtKill <= 2 * 500, "two batches in flight at most")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("""
        SIGTERM while operations go from batch to batch: the two requests in flight finish, none starts after, and a \
        restart delivers the rest exactly once
        """)
    func stopDuringRunsOfBatches() async throws {
        // One record per request, so that each slot's operation goes on from batch to batch; from request
        // `heldFrom` on the remote holds its answers, so the stop comes with both slots busy and a backlog left.
        let heldFrom = 40
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(hold: { sequence in
            if sequence >= heldFrom { await gate.wait() }
        }))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, upload: ["timeout: 10m", "shutdown_timeout: 60s"], batchRecords: 1)
        let first = try await LogshipdProcess.start(directory: directory)
        let messages = (0..<500).map { "record \($0)" }
        let sent = try await run(
            Binaries.logctl, ["send", "--socket", "\(directory)/control.sock"],
            stdin: Data((messages.joined(separator: "\n") + "\n").utf8))
        #expect(sent.status == 0, "\(sent.standardError)")
        try await receiver.waitUntil { $0.count == heldFrom + 2 }

        // The gate opens once the shipper has begun its drain (it says so): from then on no operation may go on.
        first.signal(SIGTERM)
        try await waitUntil(within: .seconds(180)) {
            first.standardErrorSoFar.contains("waiting for requests in flight")
        }
        gate.open()
        let stopped = try await first.wait(within: .seconds(180))
        #expect(stopped.status == 0, "\(stopped.standardError)")
        #expect(receiver.requests.count == heldFrom + 2, "the held requests were answered and no other went out")

        let daemon = try await LogshipdProcess.start(directory: directory)
        try await receiver.waitFor(records: messages.count)
        let received = receiver.records.map(\.message)
        #expect(
            received.count == messages.count && Set(received) == Set(messages),
            "every record exactly once, across the stop")
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("SIGTERM with a request in flight past the shutdown timeout: exit 0, and the batch is sent after a restart")
    func gentleStopKeepsBatch() async throws {
        // A remote that never answers: only the shutdown timeout can end the stop.
        let gate = Gate()
        defer { gate.open() }
        let hanging = try await TestReceiver(behavior: .init(hold: { _ in await gate.wait() }))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(
            directory: directory, url: hanging.url, upload: ["shutdown_timeout: 1s", "timeout: 10m"])
        var daemon = try await LogshipdProcess.start(directory: directory)
        let sent = try await run(
            Binaries.logctl,
            ["send", "--socket", "\(directory)/control.sock", "--priority", "error", "kept across a stop"])
        #expect(sent.status == 0, "\(sent.standardError)")
        try await hanging.waitFor(records: 1)

        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait(within: .seconds(180))
        #expect(stopped.status == 0, "\(stopped.standardError)")
        #expect(hanging.receiver.statistics.inFlight == 1, "the daemon left its request unanswered")

        let fast = try await TestReceiver()
        try LogshipdProcess.configure(directory: directory, url: fast.url, upload: ["shutdown_timeout: 1s"])
        daemon = try await LogshipdProcess.start(directory: directory)
        try await fast.waitFor(records: 1)
        #expect(fast.records.map(\.message) == ["kept across a stop"])
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }
}
