import Foundation
import LogShip
import LogShipTestKit
import Testing

/// `upload.url` as a list: delivery moves to the secondary while the primary is down, and back once it answers.
@Suite("Failover to a second receiver", .serialized)
struct FailoverTests {
    @Test("""
        primary down: the secondary receives at once, the crash lane first; primary back: its probe is answered and \
        traffic returns; nothing accepted twice
        """)
    func failoverAndBack() async throws {
        let reserved = try PortReservation()  // the primary's port: bound while the primary is down, refusing
        let primary = try await TestReceiver(port: reserved.port)
        // Slow, so that a backlog lasts while the primary's probe goes out.
        let secondary = try await TestReceiver(behavior: .init(delay: .milliseconds(200)))
        let daemon = try await TestDaemon.start(receiver: primary) {
            $0.upload.endpoints = [.init(url: primary.url), .init(url: secondary.url)]
            // A resting primary is probed at most a second after its last failure.
            $0.upload.retryInitial = .milliseconds(100)
            $0.upload.retryMax = .seconds(1)
            $0.batch.maxRecords = 50
        }
        let slots = daemon.configuration.upload.maxInFlight

        try await daemon.send(count: 100, priority: "info", prefix: "before")
        try await eventually { try await daemon.status().delivered == 100 }
        #expect(primary.records.count == 100 && secondary.requests.isEmpty)

        // The primary goes down. Uploads are held meanwhile, so that a backlog is spooled when the first requests
        // meet the outage; delivery moves to the secondary.
        daemon.shipper.setPausedByOperator(true)
        await primary.stop()
        try await daemon.send(count: 1000, priority: "info", prefix: "during")
        let down = ContinuousClock.now
        daemon.shipper.setPausedByOperator(false)
        try await eventually { try await daemon.status().endpoints.map(\.active) == [false, true] }
        print("delivery moved to the secondary \(ContinuousClock.now - down) after the primary's outage met it")

        // A crash record while the secondary works through the backlog: it goes ahead of every batch claimed after
        // it was accepted, behind at most what had arrived and what was in flight then (whatever the machine's
        // speed: the failed requests' batches may reach the secondary late, but were claimed before).
        try await daemon.send(count: 1, priority: "crash", prefix: "segfault")
        let arrivedBeforeCrash = secondary.requests.count
        try await secondary.waitUntil { requests in
            requests.contains { $0.status == 200 && $0.records.contains { $0.message == "segfault 0" } }
        }
        let taken = secondary.requests.filter { $0.status == 200 }.sorted { ($0.batch ?? .max) < ($1.batch ?? .max) }
        let crashPlace = try #require(taken.firstIndex { $0.records.contains { $0.message == "segfault 0" } })
        #expect(
            crashPlace <= arrivedBeforeCrash + slots,
            """
            only requests arrived or in flight go before the crash record: \(crashPlace) did, \
            \(arrivedBeforeCrash) arrived
            """)
        try await eventually { try await daemon.status().delivered == 1101 }
        let movedAway = try await daemon.status()
        #expect(movedAway.endpoints.map(\.url) == [primary.url, secondary.url])
        #expect(movedAway.endpoints.map(\.active) == [false, true])
        #expect(movedAway.endpoints[0].restsUntil != nil, "the primary rests")
        #expect(movedAway.endpoints[0].failure?.contains("127.0.0.1:\(reserved.port)") == true)
        #expect(movedAway.endpoints[1].delivered == 1001)
        let table = try await run(Binaries.logctl, ["status", "--socket", daemon.controlPath]).standardOutput
        #expect(table.contains("endpoints     1. \(primary.url): resting after "), "\(table)")
        #expect(table.contains("              2. \(secondary.url): active; 1001 delivered"), "\(table)")

        // The primary comes back on its port. A backlog leaves through the secondary until the primary's probe,
        // one of its batches, is answered; from then on the primary takes the records.
        let back = try await TestReceiver(port: reserved.port)
        let returned = ContinuousClock.now
        try await daemon.send(count: 1000, priority: "info", prefix: "after")
        try await back.waitUntil { requests in requests.contains { $0.status == 200 } }
        print("traffic returned to the primary \(ContinuousClock.now - returned) after it came back")
        try await eventually { try await daemon.status().delivered == 2101 }
        let recovered = try await daemon.status()
        #expect(recovered.endpoints.map(\.active) == [true, false])
        #expect(recovered.endpoints.allSatisfy { $0.restsUntil == nil })
        try await daemon.send(count: 100, priority: "info", prefix: "final")
        try await eventually { try await daemon.status().delivered == 2201 }
        #expect(!secondary.records.contains { $0.message.hasPrefix("final") }, "the primary takes what comes next")

        // Every record was accepted, and once: the only repeats possible are requests the primary read as it
        // stopped, which the daemon saw fail and sent to the secondary.
        let accepted = [primary, secondary, back].flatMap { receiver in
            receiver.requests.filter { $0.status == 200 }.flatMap(\.records).map(\.message)
        }
        let counts = Dictionary(accepted.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(counts.count == 2201, "every record arrived")
        let repeated = counts.filter { $0.value > 1 }
        #expect(repeated.count <= slots * 50, "repeats beyond the requests in flight at the switch: \(repeated.count)")
        print("records accepted twice across receivers: \(repeated.count)")
        try await daemon.stop()
        reserved.release()
    }
}
