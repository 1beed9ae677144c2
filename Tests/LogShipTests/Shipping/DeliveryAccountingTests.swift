import Foundation
import LogShip
import LogShipTestKit
import Synchronization
import Testing

/// What `logctl status` says delivery did: counters with one meaning each, and a `last error` that is the latest
/// failed request's, never an older one's, and says when requests have succeeded since.
@Suite("Delivery in status")
struct DeliveryAccountingTests {
    @Test("""
        last error: a refusal, then a 400 that replaces it though nothing is retried, then past once a request is \
        accepted
        """)
    func lastErrorFollowsTheLatestRequest() async throws {
        let reserved = try PortReservation()  // bound, never listening: the remote is down
        let stand = try await TestReceiver()  // never posted to: the daemon is pointed at the reserved port
        let daemon = try await TestDaemon.start(receiver: stand) {
            $0.upload.url = "http://127.0.0.1:\(reserved.port)/ingest"
        }
        #expect(try await daemon.send([Submission(message: "poison", priority: "info")]).ok)
        try await eventually { try await daemon.status().failedRequests >= 1 }
        let down = try await daemon.status()
        #expect(down.lastError == "cannot connect to 127.0.0.1:\(reserved.port): connection refused")
        #expect(!down.lastErrorPast && down.lastAcceptedAt == nil)

        // The remote comes back on the same port and refuses the record for what it holds.
        let receiver = try await TestReceiver(port: reserved.port, behavior: .init { _, records in
            records.contains { $0.message == "poison" } ? 400 : 200
        })
        reserved.release()
        try await eventually { try await daemon.status().deadLettered == 1 }
        let refused = try await daemon.status()
        #expect(
            refused.lastError?.hasPrefix("HTTP 400") == true,
            "a dead-lettered 400 is the latest failure: \(refused.lastError ?? "")")
        #expect(try #require(refused.lastErrorAt) > down.lastErrorAt ?? "")
        #expect(!refused.lastErrorPast, "no request was accepted after it")
        #expect(refused.pausedUntil == nil && refused.lastFailure == nil, "the remote is not failing: nothing waits")

        #expect(try await daemon.send([Submission(message: "fine", priority: "info")]).ok)
        try await receiver.waitFor(records: 2)
        try await eventually { try await daemon.status().delivered == 1 }
        let recovered = try await daemon.status()
        #expect(
            recovered.lastError == refused.lastError && recovered.lastErrorAt == refused.lastErrorAt, "kept in sight")
        #expect(recovered.lastErrorPast)
        #expect(try #require(recovered.lastAcceptedAt) > refused.lastErrorAt ?? "")
        let table = try await run(Binaries.logctl, ["status", "--socket", daemon.controlPath]).standardOutput
        #expect(table.contains("last error    HTTP 400"), "\(table)")
        #expect(table.contains("; past: the remote has accepted requests since, last at "), "\(table)")
        try await daemon.stop()
    }

    @Test("""
        counters: a 503 is retried, the 400s that isolate two bad records are rejected and dead-letter them; they add up
        """)
    func retriedApartFromRejected() async throws {
        // The first request meets an unavailable remote; after that the remote refuses any request holding a bad
        // record. Ten records of one send are one batch: 503, then the batch again, split until the two bad ones
        // are alone: [0-9] 400, [0-4] 400, [0 1] 400, [0] 400, [1] 400, [2-4] 200, [5-9] 200.
        let receiver = try await TestReceiver(behavior: .init { sequence, records in
            sequence == 0 ? 503 : records.contains { $0.message.hasPrefix("bad") } ? 400 : 200
        })
        let daemon = try await TestDaemon.start(receiver: receiver)
        let submissions = (0..<10).map { Submission(message: $0 < 2 ? "bad \($0)" : "fine \($0)", priority: "info") }
        #expect(try await daemon.send(submissions).ok)
        try await eventually {
            let status = try await daemon.status()
            return status.delivered == 8 && status.deadLettered == 2 && status.claimed == 0
        }
        let status = try await daemon.status()
        #expect(status.requests == 8 && status.failedRequests == 6)
        #expect(status.retriedRequests == 1, "only the 503's batch went back whole")
        #expect(status.rejectedRequests == 5, "the 400s, of which two dead-lettered a record each")
        #expect(status.failedRequests == status.retriedRequests + status.rejectedRequests)
        #expect(receiver.requests.count == status.requests)

        let table = try await run(Binaries.logctl, ["status", "--socket", daemon.controlPath]).standardOutput
        #expect(table.contains("delivered     8 record(s) in 8 request(s)\n"), "\(table)")
        #expect(
            table.contains("failed        6 request(s): 1 retried whole, 5 rejected for their records\n"), "\(table)")
        #expect(table.contains("dead letters  2 record(s) held, 2 dead-lettered since start\n"), "\(table)")
        try await daemon.stop()
    }
}
