import AsyncHTTPClient
import Foundation
@testable import LogShip
import LogShipTestKit
import NIOPosix
import Testing

/// The Prometheus endpoint.
@Suite("Metrics")
struct MetricsTests {
    /// Samples of a Prometheus text exposition, by name with labels; fails on a line that is not one.
    static func samples(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        var typed: Set<String> = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                typed.insert(String(line.split(separator: " ")[2]))
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                throw WaitTimeout(description: "not a sample: \(line)")
            }
            let series = String(line[..<space])
            let name = String(series.prefix { $0 != "{" })
            let isTyped = typed.contains(name) || typed.contains(where: { name.hasPrefix($0 + "_") })
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }), isTyped else {
                throw WaitTimeout(description: "sample without a TYPE: \(line)")
            }
            samples[series] = value
        }
        return samples
    }

    @Test("the metrics endpoint parses as Prometheus text and its counters equal logctl status --json's")
    func endpoint() async throws {
        let receiver = try await TestReceiver(behavior: .init { _, records in
            records.contains { $0.message.hasPrefix("poison") } ? 400 : 200
        })
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.metrics.listen = "127.0.0.1:0"
            // The budget starts empty: a batch claimed within a quarter second of the start waits for it.
            $0.upload.rate = UploadRateBudget(bytesPerSecond: 1 << 20)
        }
        let port = try #require(daemon.daemon.metricsAddress?.port)
        #expect(try await daemon.send((0..<20).map { Submission(message: $0 == 3 ? "poison" : "fine \($0)") }).ok)
        try await eventually { try await daemon.status().deadLetters == 1 }
        try await daemon.send(count: 7, priority: "crash", prefix: "crash")
        try await eventually { try await daemon.status().delivered == 26 }

        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let response = try await client.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        try await client.shutdown()
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let samples = try Self.samples(String(buffer: body))

        let status = try await LogshipdProcess.status(socket: daemon.controlPath)
        #expect(samples["logshipd_records_received_total"] == Double(status.received))
        #expect(samples["logshipd_records_delivered_total"] == Double(status.delivered))
        #expect(samples["logshipd_records_dead_lettered_total"] == Double(status.deadLettered))
        #expect(samples["logshipd_requests_total"] == Double(status.requests))
        #expect(samples["logshipd_requests_failed_total"] == Double(status.failedRequests))
        #expect(samples["logshipd_requests_retried_total"] == Double(status.retriedRequests))
        #expect(samples["logshipd_requests_rejected_total"] == Double(status.rejectedRequests))
        #expect(
            status.retriedRequests == 0 && status.rejectedRequests == status.failedRequests
                && status.failedRequests > 0)
        #expect(samples["logshipd_dead_letters"] == Double(status.deadLetters))
        #expect(samples[#"logshipd_records_pending{class="info"}"#] == Double(status.pending["info"] ?? 0))
        #expect(samples["logshipd_spool_budget_bytes"] == Double(status.spoolBudget))
        #expect(samples["logshipd_upload_request_duration_seconds_count"] == Double(status.requests))
        #expect(samples["logshipd_upload_rate_budget_bytes_per_second"] == Double(1 << 20))
        #expect(samples["logshipd_upload_rate_effective_bytes_per_second"] == Double(status.rateEffective ?? -1))
        let waited = try #require(samples[#"logshipd_upload_throttled_seconds_total{class="info"}"#])
        #expect(abs(waited - (status.throttledSeconds["info"] ?? 0)) < 0.001, "\(waited) \(status.throttledSeconds)")
        #expect(status.delivered == 26 && status.deadLettered == 1)
        try await daemon.stop()
    }

    @Test("""
        the spool's disk is exported as the status gives it: free, size, what the spool leaves free, and what it \
        evicted, refused and holds back for it
        """)
    func diskMetrics() throws {
        var status = DaemonStatus()
        status.spoolDiskFree = 5 << 20
        status.spoolDiskSize = 8 << 20
        status.spoolDiskMinimumFree = 2 << 20
        status.evictedForDisk = 200_080
        status.refusedForDisk = 3
        status.waitingForRoom = 17
        let samples = try Self.samples(String(decoding: MetricsExporter().exposition(for: status), as: UTF8.self))
        #expect(samples["logshipd_spool_disk_free_bytes"] == Double(5 << 20))
        #expect(samples["logshipd_spool_disk_size_bytes"] == Double(8 << 20))
        #expect(samples["logshipd_spool_disk_min_free_bytes"] == Double(2 << 20))
        #expect(samples["logshipd_records_evicted_for_disk_total"] == 200_080)
        #expect(samples["logshipd_records_refused_for_disk_total"] == 3)
        #expect(samples["logshipd_records_waiting_for_room"] == 17)
    }

    @Test("""
        each endpoint has series labelled with its URL: requests, failures and records it took, whether it is active \
        or resting
        """)
    func endpointMetrics() throws {
        var status = DaemonStatus()
        var primary = EndpointStatus(url: "https://a.example/ingest")
        primary.restsUntil = "2026-11-25T10:00:30.000000Z"
        primary.failure = "cannot connect to a.example:443: connection refused"
        primary.requests = 4
        primary.failedRequests = 3
        primary.delivered = 10
        var secondary = EndpointStatus(url: "https://b.example/ingest")
        secondary.active = true
        secondary.requests = 7
        secondary.delivered = 700
        status.endpoints = [primary, secondary]
        let exporter = MetricsExporter()
        var samples = try Self.samples(String(decoding: exporter.exposition(for: status), as: UTF8.self))
        let a = #"{endpoint="https://a.example/ingest"}"#
        let b = #"{endpoint="https://b.example/ingest"}"#
        #expect(samples["logshipd_endpoint_requests_total" + a] == 4)
        #expect(samples["logshipd_endpoint_requests_failed_total" + a] == 3)
        #expect(samples["logshipd_endpoint_records_delivered_total" + b] == 700)
        #expect(samples["logshipd_endpoint_active" + a] == 0 && samples["logshipd_endpoint_active" + b] == 1)
        #expect(samples["logshipd_endpoint_resting" + a] == 1 && samples["logshipd_endpoint_resting" + b] == 0)

        status.endpoints[1].requests = 9
        samples = try Self.samples(String(decoding: exporter.exposition(for: status), as: UTF8.self))
        #expect(samples["logshipd_endpoint_requests_total" + b] == 9, "a scrape adds what grew since the last")
    }
}
