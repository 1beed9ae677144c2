import Foundation
import LogShip
import Synchronization
import Testing
import LogShipTestKit

/// The dam under load: real control socket, real OperationQueue, real HTTP to a real receiver.
@Suite("Shipping, end to end", .serialized)
struct ShippingIntegrationTests {
    @Test("the receiver never sees more than two requests in flight: 10 000 records, slow receiver")
    func twoInFlight() async throws {
        let daemon = try await TestDaemon.start(receiver: .init(delay: .milliseconds(20))) {
            $0.batch.maxRecords = 50
        }
        try await daemon.send(count: 10_000, priority: "info", prefix: "load")
        try await daemon.receiver.waitFor(records: 10_000, within: .seconds(300))
        #expect(daemon.receiver.records.count == 10_000)
        #expect(daemon.receiver.maximumInFlight == 2, "both slots are used, and never a third")
        #expect(daemon.receiver.requests.allSatisfy { $0.inFlightAtArrival <= 2 })
        try await daemon.stop()
    }

    struct OvertakeCase: CustomTestStringConvertible, Sendable {
        var urgent: String
        var backlog: String
        /// Records per request (`batch.max_records`); with one, the backlog's operations go from batch to batch in
        /// their slots, and must give a slot up for the urgent record.
        var batch = 100
        var testDescription: String { "\(urgent) overtakes \(backlog), \(batch) per request" }
    }

    @Test(
        "an urgent record overtakes a queued backlog of 5 000 records",
        arguments: [
            OvertakeCase(urgent: "crash", backlog: "info"), OvertakeCase(urgent: "error", backlog: "debug"),
            OvertakeCase(urgent: "crash", backlog: "info", batch: 1),
        ])
    func urgentOvertakesBacklog(_ overtake: OvertakeCase) async throws {
        // The receiver holds every request until the urgent record is accepted: the moment the test looks at is
        // "both slots busy, the backlog in the spool", however fast this machine sends or delivers.
        let gate = Gate()
        let daemon = try await TestDaemon.start(receiver: .init(hold: { _ in await gate.wait() })) {
            $0.batch.maxRecords = overtake.batch
            $0.upload.timeout = .seconds(600)
        }
        try await daemon.send(count: 5_000, priority: overtake.backlog, prefix: "chatter")
        let response = try await daemon.send([Submission(message: "URGENT", priority: overtake.urgent)])
        #expect(response.ok)
        // Claims had been made up to the highest batch number that had arrived, plus at most one per slot whose
        // request was still on its way. The urgent record must be in the very next claim.
        let claimedBeforeAcceptance = daemon.receiver.requests.compactMap(\.batch).max() ?? 0
        let maxInFlight = daemon.configuration.upload.maxInFlight
        gate.open()

        try await daemon.receiver.waitFor(records: 5_001, within: .seconds(180))
        // Claim order, as the daemon numbered its batches (arrival order also depends on thread scheduling).
        let requests = daemon.receiver.requests.sorted { $0.batch! < $1.batch! }
        let carrier = try #require(requests.first { $0.records.contains { $0.message == "URGENT" } })
        #expect(carrier.records.count == 1, "an urgent batch holds only its own class")
        #expect(
            carrier.batch! <= claimedBeforeAcceptance + maxInFlight + 1,
            "the urgent record is in the first claim after those already running")

        // What was still pending when the urgent record was accepted: every backlog record not in a claim that
        // may already have been made then.
        let pendingAtAcceptance = requests
            .filter { $0.batch! > claimedBeforeAcceptance + maxInFlight && $0.batch! != carrier.batch! }
            .reduce(0) { $0 + $1.records.count }
        let overtaken = requests.filter { $0.batch! > carrier.batch! }.reduce(0) { $0 + $1.records.count }
        #expect(
            pendingAtAcceptance >= 5_000 - 2 * maxInFlight * overtake.batch,
            "with the receiver holding its requests, all but the held claims (and any on their way) were pending")
        #expect(
            Double(overtaken) >= 0.9 * Double(pendingAtAcceptance),
            "ahead of at least 90% of the \(pendingAtAcceptance) pending (was ahead of \(overtaken))")

        let backlog = requests.map { request in
            request.records.filter { $0.message.hasPrefix("chatter") }.map { Int($0.message.split(separator: " ")[1])! }
        }
        #expect(backlog.joined().count == 5_000)
        #expect(fifoViolations(backlog, window: 1) == 0, "within a class, claims follow arrival order")
        try await daemon.stop()
    }

    @Test("while both slots are busy, records back up into one batch; it leaves when a slot frees")
    func batching() async throws {
        // The receiver holds requests until every line is in the spool, so what backs up does not depend on how
        // fast lines arrive compared with how fast they leave.
        let gate = Gate()
        let daemon = try await TestDaemon.start(receiver: .init(hold: { _ in await gate.wait() })) {
            $0.upload.timeout = .seconds(600)
        }
        // Two lone records take both slots, one after the other.
        try await daemon.ingest(["<6>first"])
        try await daemon.receiver.waitUntil { $0.count == 1 }
        try await daemon.ingest(["<6>second"])
        try await daemon.receiver.waitUntil { $0.count == 2 }

        let streamPath = daemon.streamPath
        try await offloaded {
            let client = try UnixClient(path: streamPath, type: .stream)
            for index in 0..<1_000 { try client.write("<6>line \(index)\n") }
        }
        try await eventually { try await daemon.status().pending["info", default: 0] == 1_000 }
        gate.open()

        try await daemon.receiver.waitFor(records: 1_002, within: .seconds(180))
        let requests = daemon.receiver.requests
        #expect(requests.map(\.records.count) == [1, 1, 1_000], "two held requests, then everything that backed up")
        #expect(requests.flatMap(\.records).map(\.message) == ["first", "second"] + (0..<1_000).map { "line \($0)" })
        try await daemon.stop()
    }

    @Test("an idle daemon sends a lone record at once, in a request of its own")
    func loneRecord() async throws {
        let daemon = try await TestDaemon.start()
        try await daemon.ingest(["<6>first"])
        try await daemon.receiver.waitFor(records: 1, within: .seconds(180))
        try await daemon.ingest(["<6>second"])
        try await daemon.receiver.waitFor(records: 2, within: .seconds(180))
        #expect(daemon.receiver.requests.map { $0.records.map(\.message) } == [["first"], ["second"]])
        try await daemon.stop()
    }

    @Test("a remote that answers 500 gets the batch again until it takes it")
    func retriesFailures() async throws {
        // Every other request is refused: the same each run, however many requests the records take.
        let daemon = try await TestDaemon.start(receiver: .init { sequence, _ in sequence % 2 == 0 ? 500 : 200 }) {
            $0.batch.maxRecords = 10
        }
        try await daemon.send(count: 200, priority: "warning", prefix: "retry")
        try await daemon.receiver.waitUntil(within: .seconds(180)) { requests in
            Set(requests.filter { $0.status == 200 }.flatMap(\.records).map(\.message)).count == 200
        }
        let requests = daemon.receiver.requests
        #expect(requests.contains { $0.status == 500 }, "some requests failed and were retried")
        try await daemon.stop()
    }
}
