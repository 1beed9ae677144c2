import Foundation
import LogShip
import Synchronization
import Testing
import LogShipTestKit

/// Losing nothing: the SQLite spool under outages, refusals, floods and restarts, against a real receiver.
@Suite("Durability, end to end", .serialized)
struct DurabilityTests {
    /// A daemon on a SQLite spool in its own directory, with quick retries.
    static func start(
        receiver: TestReceiver, directory: String? = nil, configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> TestDaemon {
        let directory = try directory ?? TemporaryDirectory.make()
        return try await TestDaemon.start(receiver: receiver, directory: directory) {
            $0.spool.path = "\(directory)/spool.db"
            $0.spool.minFreeDisk = 0
            configure(&$0)
        }
    }

    static let classes = ["crash", "error", "warning", "info", "debug"]

    @Test("receiver down for 30 s while 20 000 mixed records arrive: all arrive, crash and error first")
    func outage() async throws {
        let reserved = try PortReservation()
        let placeholder = try await TestReceiver()
        let daemon = try await Self.start(receiver: placeholder) {
            $0.upload.url = "http://127.0.0.1:\(reserved.port)/ingest"
            $0.upload.retryMax = .seconds(2)
            $0.batch.maxRecords = 200
        }
        let outageEnds = ContinuousClock.now + .seconds(30)
        var generator = SystemRandomNumberGenerator()
        var sent: [String: String] = [:]
        for chunk in stride(from: 0, to: 20_000, by: 1000) {
            let submissions = (chunk..<chunk + 1000).map { index in
                let priority = Self.classes.randomElement(using: &generator)!
                sent["mixed \(index)"] = priority
                return Submission(message: "mixed \(index)", priority: priority)
            }
            #expect(try await daemon.send(submissions).ok)
        }
        try await eventually { try await daemon.status().failedRequests > 0 }

        // The outage itself: the remote stays away for 30 seconds.
        try await Task.sleep(until: outageEnds)
        let receiver = try await TestReceiver(port: reserved.port)
        reserved.release()
        try await receiver.waitFor(records: 20_000, within: .seconds(300))

        // Claim order, as the daemon numbered its batches (arrival order also depends on thread scheduling).
        let requests = receiver.requests.sorted { $0.batch! < $1.batch! }
        let received = requests.flatMap(\.records)
        #expect(Set(received.map(\.message)) == Set(sent.keys))
        #expect(received.count == 20_000, "no duplicates without failed deliveries")
        for record in received { #expect(record.priority.description == sent[record.message]) }

        func lastClaim(of classes: Set<PriorityClass>) -> Int {
            requests.filter { $0.records.contains { classes.contains($0.priority) } }.map { $0.batch! }.max() ?? -1
        }
        let lower: Set<PriorityClass> = [.warning, .info, .debug]
        for urgent in [Set([PriorityClass.crash]), [.crash, .error]] {
            let last = lastClaim(of: urgent)
            let overtaking = requests.filter { $0.batch! < last && $0.records.contains { lower.contains($0.priority) } }
            #expect(overtaking.count <= 1, "a lower class is claimed only when no more urgent one is waiting")
        }
        try await daemon.stop()
    }

    @Test("503 on every fifth request: every record arrives exactly once in a successful request")
    func flakyRemote() async throws {
        // Deterministic refusals: the same share each run, whatever the number of requests.
        let receiver = try await TestReceiver(behavior: .init { sequence, _ in sequence % 5 == 0 ? 503 : 200 })
        let daemon = try await Self.start(receiver: receiver) {
            $0.batch.maxRecords = 100
            $0.upload.retryMax = .milliseconds(500)
        }
        try await daemon.send(count: 5_000, priority: "info", prefix: "flaky")
        try await receiver.waitUntil(within: .seconds(300)) { requests in
            Set(requests.filter { $0.status == 200 }.flatMap(\.records).map(\.message)).count == 5_000
        }
        let requests = receiver.requests
        let delivered = requests.filter { $0.status == 200 }.flatMap(\.records).map(\.message)
        #expect(delivered.count == 5_000, "exactly once per successful request")
        #expect(requests.contains { $0.status == 503 })
        // How long a stall lasted is a matter of this machine's speed: the figure is printed, the bound on the
        // retry delay itself is a unit test of the backoff.
        let longest = zip(requests.dropFirst(), requests).map { $0.arrivedAt - $1.arrivedAt }.max() ?? .zero
        print("flaky remote: \(requests.count) requests, longest gap between arrivals \(longest)")
        try await daemon.stop()
    }

    @Test("429 with Retry-After: 2 pauses every request for those 2 s")
    func retryAfter() async throws {
        let answeredFirst = Mutex<ContinuousClock.Instant?>(nil)
        let receiver = try await TestReceiver(
            behavior: .init(retryAfter: 2) { sequence, _ in
                guard sequence == 0 else { return 200 }
                answeredFirst.withLock { $0 = .now }
                return 429
            })
        let daemon = try await Self.start(receiver: receiver) { $0.batch.maxRecords = 10 }
        #expect(try await daemon.send([Submission(message: "first", priority: "warning")]).ok)
        // Only once the daemon knows of the 429 does the rest arrive, so no request can be in flight already. The
        // failed request is counted as the pause begins, and stays counted: a poll late by more than the 2 s pause
        // cannot miss it, as it could miss `pausedUntil`.
        try await eventually { try await daemon.status().failedRequests >= 1 }
        try await daemon.send(count: 299, priority: "warning", prefix: "paced")
        try await receiver.waitUntil(within: .seconds(180)) { requests in
            requests.filter { $0.status == 200 }.reduce(0) { $0 + $1.records.count } == 300
        }
        let refusedAt = try #require(answeredFirst.withLock { $0 })
        let later = receiver.requests.filter { $0.sequence > 0 && $0.arrivedAt > refusedAt }
        #expect(!later.isEmpty)
        for request in later {
            #expect(request.arrivedAt - refusedAt >= .seconds(2), "request \(request.sequence) came too early")
        }
        try await daemon.stop()
    }

    @Test("400 for batches with a bad record: exactly the bad records become dead letters, the rest arrives")
    func poisonedBatches() async throws {
        let accepting = Mutex(false)
        let receiver = try await TestReceiver(
            behavior: .init { _, records in
                records.contains { $0.fields["poison"] != nil } && !accepting.withLock({ $0 }) ? 400 : 200
            })
        let daemon = try await Self.start(receiver: receiver) { $0.batch.maxRecords = 100 }
        let marked: Set<Int> = [3, 150, 151, 499, 500, 777, 999]
        let submissions = (0..<1000).map { index in
            Submission(
                message: "record \(index)", priority: "info", fields: marked.contains(index) ? ["poison": "yes"] : nil)
        }
        #expect(try await daemon.send(submissions).ok)
        try await receiver.waitUntil(within: .seconds(180)) { requests in
            requests.filter { $0.status == 200 }.reduce(0) { $0 + $1.records.count } == 993
        }
        try await eventually(within: .seconds(180)) { try await daemon.status().deadLetters == 7 }
        let delivered = receiver.requests.filter { $0.status == 200 }.flatMap(\.records).map(\.message)
        #expect(delivered.sorted() == (0..<1000).filter { !marked.contains($0) }.map { "record \($0)" }.sorted())

        let listing = try await run(Binaries.logctl, ["dead-letters", "--socket", daemon.controlPath])
        #expect(listing.status == 0, "\(listing.standardError)")
        let entries = listing.standardOutput.split(separator: "\n").filter { !$0.hasPrefix(" ") }
        #expect(entries.count == 7)
        #expect(entries.allSatisfy { $0.contains("  info  400  HTTP 400: logctl receive answered 400") })
        for index in marked {
            #expect(listing.standardOutput.contains("\"message\":\"record \(index)\""))
        }

        // An id that names no dead letter is refused, naming it, and nothing is done, not even to the real one.
        let realID = try #require(entries.first?.split(separator: " ").first.map(String.init))
        let mixed = try await run(
            Binaries.logctl, ["dead-letters", "--purge", realID, "999999", "--socket", daemon.controlPath])
        #expect(
            mixed.status == 1 && mixed.standardError.contains("no dead letter has id 999999"), "\(mixed.standardError)")
        #expect(try await daemon.status().deadLetters == 7)

        accepting.withLock { $0 = true }
        let requeued = try await run(
            Binaries.logctl, ["dead-letters", "--requeue", "--all", "--socket", daemon.controlPath])
        #expect(requeued.standardOutput == "requeued 7 dead letter(s)\n", "\(requeued.standardError)")
        try await receiver.waitUntil(within: .seconds(180)) { requests in
            requests.filter { $0.status == 200 }.reduce(0) { $0 + $1.records.count } == 1000
        }
        #expect(try await daemon.status().deadLetters == 0)
        try await daemon.stop()
    }

    @Test("a spool of a few MB flooded with debug records keeps a later crash record; evictions are counted")
    func floodedSpool() async throws {
        let reserved = try PortReservation()
        let placeholder = try await TestReceiver()
        let daemon = try await Self.start(receiver: placeholder) {
            $0.upload.url = "http://127.0.0.1:\(reserved.port)/ingest"
            $0.upload.retryMax = .milliseconds(500)
            $0.spool.maxBytes = 2 << 20
        }
        let padding = String(repeating: "x", count: 200)
        for chunk in stride(from: 0, to: 20_000, by: 1000) {
            let submissions = (chunk..<chunk + 1000).map {
                Submission(message: "debug \($0) \(padding)", priority: "debug")
            }
            #expect(try await daemon.send(submissions).ok)
        }
        #expect(try await daemon.send([Submission(message: "the crash", priority: "crash")]).ok)
        let evicted = try await daemon.status().evicted
        #expect(evicted > 10_000, "a 2 MiB spool holds a few thousand of these")

        let receiver = try await TestReceiver(port: reserved.port)
        reserved.release()
        try await receiver.waitUntil(within: .seconds(180)) { requests in
            requests.flatMap(\.records).contains { $0.message == "the crash" }
        }
        try await eventually(within: .seconds(180)) {
            let status = try await daemon.status()
            return status.pending.values.reduce(0, +) + status.claimed == 0
        }
        let debugDelivered = receiver.records.filter { $0.priority == .debug }
        #expect(Set(debugDelivered.map(\.message)).count == debugDelivered.count, "no debug record twice")
        let status = try await daemon.status()
        #expect(debugDelivered.count + status.evicted == 20_000, "every debug record was delivered or counted evicted")
        #expect(status.evicted == evicted)
        try await daemon.stop()
    }

    @Test("a restart with 100 000 pending records drains them in class order")
    func restartBacklog() async throws {
        let directory = try TemporaryDirectory.make()
        let spool = try await SQLiteSpool.open(
            path: "\(directory)/spool.db", maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        let order = PriorityClass.mostUrgentFirst
        for chunk in stride(from: 0, to: 100_000, by: 2000) {
            let entries = (chunk..<chunk + 2000).map { index in
                let priority = order[index % 5]
                return SpoolEntry(
                    LogRecord(
                        timestamp: .now(), priority: priority, severity: priority.defaultSeverity, host: "h",
                        source: .control, message: "backlog \(index)"))
            }
            _ = try await spool.append(entries)
        }
        await spool.close()

        let receiver = try await TestReceiver()
        let daemon = try await Self.start(receiver: receiver, directory: directory)
        try await receiver.waitFor(records: 100_000, within: .seconds(180))
        // Claim order, as the daemon numbered its batches (arrival order also depends on thread scheduling).
        let requests = receiver.requests.sorted { $0.batch! < $1.batch! }
        #expect(requests.flatMap(\.records).count == 100_000)
        // At start both slots claim at once, and a lower class may be delivered, more than once on a loaded
        // machine, while the higher class's first claim still reads its chunks back: only what a lower class
        // claimed once the higher one was claiming counts against the order.
        for (higher, lower) in zip(order, order.dropFirst()) {
            let higherBatches = requests.filter { $0.records.first?.priority == higher }.map { $0.batch! }
            let (firstHigher, lastHigher) = (higherBatches.min() ?? -1, higherBatches.max() ?? -1)
            let early = requests.filter {
                $0.batch! > firstHigher && $0.batch! < lastHigher && $0.records.first?.priority == lower
            }
            #expect(early.count <= 1, "\(lower) claimed before \(higher) was done: \(early.count) times")
        }
        let info = requests.map { request in
            request.records.filter { $0.priority == .info }.map { Int($0.message.split(separator: " ")[1])! }
        }
        #expect(fifoViolations(info, window: 1) == 0, "within a class, claims follow arrival order")
        try await daemon.stop()
    }
}

