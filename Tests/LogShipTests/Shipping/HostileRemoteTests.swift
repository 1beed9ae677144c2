import Foundation
import GRDB
import LogShip
import NIOPosix
import Synchronization
import Testing
import LogShipTestKit

/// Remotes that refuse, stall or ask for absurd pauses, and a spool whose settling writes fail: nothing accepted
/// is lost, nothing is dead-lettered for a fault that is not the records', and delivery resumes by itself.
@Suite("Hostile remotes", .serialized)
struct HostileRemoteTests {
    @Test(
        """
        a remote refusing the credentials or the endpoint: nothing dead-lettered, backoff, status says why, all arrive \
        once it accepts
        """,
        arguments: [401, 404])
    func refusingRemote(status: Int) async throws {
        let accepting = Mutex(false)
        let receiver = try await TestReceiver(behavior: .init { _, _ in accepting.withLock { $0 } ? 200 : status })
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.retryInitial = .milliseconds(50)
            $0.upload.retryMax = .milliseconds(500)
        }
        let started = ContinuousClock.now
        try await daemon.send(count: 1_000, priority: "info", prefix: "held")
        try await receiver.waitUntil(within: .seconds(180)) { $0.count { $0.status == status } >= 3 }
        // Between two refusals the pause may have just ended ("retrying"): ask until logctl shows one.
        let controlPath = daemon.controlPath
        let pauseLine = Mutex("")
        try await eventually(within: .seconds(180)) {
            let shown = try await run(Binaries.logctl, ["status", "--socket", controlPath])
            let line = shown.standardOutput.split(separator: "\n").first { $0.hasPrefix("remote        paused until") }
            pauseLine.withLock { $0 = line.map(String.init) ?? "" }
            return line != nil
        }
        #expect(
            pauseLine.withLock { $0 }.contains(": remote refuses the endpoint or the credentials (HTTP \(status): "),
            "\(pauseLine.withLock { $0 })")
        #expect(try await daemon.status().deadLetters == 0)

        accepting.withLock { $0 = true }
        let refusedFor = ContinuousClock.now - started
        try await receiver.waitUntil(within: .seconds(180)) { requests in
            requests.filter { $0.status == 200 }.reduce(0) { $0 + $1.records.count } == 1_000
        }
        let requests = receiver.requests
        let refused = requests.filter { $0.status == status }
        // Backoff never below half its ceiling (25 ms, 50, 100, 200, then 250 ms at the 500 ms cap), one probe
        // per pause: however slow the machine, no more requests than that allows.
        let allowed = 2 * (5 + Int(refusedFor / .milliseconds(250)))
        #expect(refused.count <= allowed, "\(refused.count) refused requests in \(refusedFor)")
        #expect(refused.allSatisfy { $0.records.count == 1_000 }, "a refused batch is never split")
        let delivered = requests.filter { $0.status == 200 }.flatMap(\.records).map(\.message)
        #expect(Set(delivered) == Set((0..<1_000).map { "held \($0)" }) && delivered.count == 1_000)

        let status = try await daemon.status()
        #expect(status.deadLetters == 0 && status.pausedUntil == nil)
        try await daemon.stop()
    }

    @Test("""
        a remote that sends its headers and stalls the body: the request is abandoned at upload.timeout and retried; a \
        crash record still arrives
        """)
    func stalledBody() async throws {
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(holdBody: { sequence in
            if sequence == 0 { await gate.wait() }
        }))
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.timeout = .seconds(2)
        }
        // Before the request leaves: the receiver may see its head late on a loaded machine, but never early.
        let sentAt = ContinuousClock.now
        try await daemon.send(count: 10, priority: "info", prefix: "stalled")
        try await receiver.waitUntil { $0.count == 1 }
        #expect(try await daemon.send([Submission(message: "crash while stalled", priority: "crash")]).ok)

        try await receiver.waitUntil(within: .seconds(180)) { requests in
            let answered = requests.dropFirst().flatMap(\.records).map(\.message)
            return answered.contains("crash while stalled") && answered.count { $0.hasPrefix("stalled") } == 10
        }
        let retry = try #require(
            receiver.requests.dropFirst().first { $0.records.contains { $0.message == "stalled 0" } })
        #expect(retry.arrivedAt - sentAt >= .seconds(2), "abandoned at the timeout, not before")
        let status = try await daemon.status()
        #expect(status.failedRequests >= 1)
        try await daemon.stop()
    }

    @Test("a refusal whose body stalls keeps its meaning: 401 is still the credentials, not a timeout")
    func stalledRefusal() async throws {
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(
            behavior: .init(decide: { _, _ in 401 }, holdBody: { _ in await gate.wait() }))
        let uploader = try HTTPUploader(
            // Long enough for the 401 head to arrive on a loaded machine; the body never does, so the call ends here.
            configuration: .init(url: receiver.url, timeout: .seconds(10)),
            eventLoops: [MultiThreadedEventLoopGroup.singleton.next()])
        await #expect {
            try await uploader.upload(Payload(lines: [Array("{}".utf8)[...]], batchNumber: 1))
        } throws: { error in
            (error as? UploadError)?.status == 401 && (error as? UploadError)?.fault == .endpointRefused
        }
        uploader.shutdown()
    }

    @Test("Retry-After asking for a day, or for longer than any clock holds, pauses for upload.retry_after_max",
          arguments: [86_400, Int.max])
    func retryAfterCap(seconds: Int) async throws {
        let refusedAt = Mutex<ContinuousClock.Instant?>(nil)
        let receiver = try await TestReceiver(
            behavior: .init(retryAfter: seconds) { sequence, _ in
                guard sequence == 0 else { return 200 }
                refusedAt.withLock { $0 = .now }
                return 429
            })
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.retryAfterMax = .seconds(2)
        }
        #expect(try await daemon.send([Submission(message: "asked to wait", priority: "warning")]).ok)
        try await receiver.waitUntil(within: .seconds(180)) { $0.contains { $0.status == 200 } }
        let refused = try #require(refusedAt.withLock { $0 })
        let retried = try #require(receiver.requests.first { $0.status == 200 })
        #expect(retried.arrivedAt - refused >= .seconds(2), "the capped pause is still honoured")
        #expect(retried.records.map(\.message) == ["asked to wait"])
        try await daemon.stop()
    }

    struct SettleFault: CustomTestStringConvertible, Sendable {
        var name: String
        /// The statement the injected trigger refuses, and on which table.
        var statement: String
        var table: String
        /// The receiver's answer while the fault lasts.
        var answer: Int
        /// `batch.max_records`: below 10, a batch is part of the one chunk the ten records are stored in. While the
        /// fault lasts, only the batch that starts the chunk is then given ``answer``, and every other one 503: were
        /// two batches answered 200, their acknowledgements could be committed together (a slow machine delays the
        /// first one's commit past the second's retry), settle the whole chunk, and never meet the fault.
        var maxRecords = 1000
        var testDescription: String { name }
    }

    @Test("a settling write that fails puts the batch back to pending; it is delivered once the spool works again",
          arguments: [
              SettleFault(
                  name: "acknowledge of a whole chunk (DELETE) fails after a 200", statement: "DELETE", table: "chunk",
                  answer: 200),
              SettleFault(
                  name: "acknowledge of part of a chunk (its settled run) fails after a 200", statement: "INSERT",
                  table: "chunk_settled", answer: 200, maxRecords: 5),
              SettleFault(
                  name: "dead letter (INSERT) fails after a 400", statement: "INSERT", table: "dead_letter",
                  answer: 400),
          ])
    func failedSettle(fault: SettleFault) async throws {
        let directory = try TemporaryDirectory.make()
        let faulty = Mutex(true)
        let receiver = try await TestReceiver(behavior: .init { _, records in
            guard faulty.withLock({ $0 }) else { return 200 }
            let startsChunk = records.first?.message == "settle 0"
            return fault.maxRecords < 10 && !startsChunk ? 503 : fault.answer
        })
        let daemon = try await TestDaemon.start(receiver: receiver, directory: directory) {
            $0.spool.path = "\(directory)/spool.db"
            $0.spool.minFreeDisk = 0
            $0.batch.maxRecords = fault.maxRecords
            $0.upload.retryInitial = .milliseconds(100)
            $0.upload.retryMax = .milliseconds(500)
        }
        // A failing disk, as far as SQLite can make one: the trigger aborts the settling statement.
        let spoolFile = try DatabaseQueue(path: "\(directory)/spool.db")
        try await spoolFile.write { db in
            try db.execute(sql: "CREATE TABLE fault (active INTEGER NOT NULL)")
            try db.execute(sql: "INSERT INTO fault VALUES (1)")
            try db.execute(sql: """
                CREATE TRIGGER injected_fault BEFORE \(fault.statement) ON \(fault.table)
                WHEN (SELECT active FROM fault) = 1
                BEGIN SELECT RAISE(ABORT, 'injected settle failure'); END
                """)
        }
        try await daemon.send(count: 10, priority: "error", prefix: "settle")
        // Sent (and refused or taken), then the settle failed: the records are pending again, not stuck claimed.
        try await receiver.waitUntil(within: .seconds(180)) { $0.count >= 2 }
        try await eventually(within: .seconds(180)) {
            let status = try await daemon.status()
            return status.claimed == 0 && status.pending["error"] == 10
        }

        // The remote first, the disk second: the other way round, a 400 answered in between would dead-letter
        // records that the remote is about to take.
        faulty.withLock { $0 = false }
        try await spoolFile.write { db in try db.execute(sql: "UPDATE fault SET active = 0") }
        try await eventually(within: .seconds(180)) {
            let status = try await daemon.status()
            return status.claimed == 0 && status.pending.values.reduce(0, +) == 0
        }
        let delivered = receiver.requests.filter { $0.status == 200 }.flatMap(\.records).map(\.message)
        #expect(Set(delivered) == Set((0..<10).map { "settle \($0)" }), "every record reached the remote")
        try await daemon.stop()
        // The file's last connection: its close checkpoints the daemon's WAL, which waits for the disk.
        try await offloaded { try spoolFile.close() }
    }
}
