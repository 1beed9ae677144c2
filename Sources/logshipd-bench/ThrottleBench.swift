import Foundation
import LogShip
import LogShipTestKit
import NIOPosix

/// Issue 30, point 6: one host with an upload budget of 1 MB/s drains a backlog of about 100 MB (as uploaded)
/// against a receiver that answers after 50 ms, while a crash record is sent every 200 ms.
///
/// The backlog is written while uploads are paused (`logctl pause`), then uploads resume. The receiver notes when
/// each request's body arrived and its size; windows are measured over the drain, up to the backlog's last
/// request. After the pause the bucket holds `burst_seconds` of the budget, which the first requests spend on top
/// of the budget's share (the issue allows it). That opening is reported apart and the windows start after it:
/// it lasts until the first backlog request no larger than the median one.
enum ThrottleBench {
    static let budget = 1_000_000
    static let burstSeconds = 1.0
    static let receiverDelay: Duration = .milliseconds(50)
    static let crashInterval: Duration = .milliseconds(200)
    /// Records of the backlog, each about 374 bytes as uploaded (NDJSON with the record's id and the syslog header's
    /// fields; 320 before record ids): about 100 MB, 100 s of the budget.
    static let records = 267_000

    struct Outcome {
        var records: Int
        /// Body bytes of every request of the drain, crash probes included (they are debited from the budget).
        var bytes: Int
        var requests: Int
        /// From the first request to the last of the backlog.
        var seconds: Double
        var firstRequestBytes: Int
        /// The deviation from the budget of the 2 seconds from the first request.
        var opening: Double
        /// How long the opening lasted, and the bytes it sent beyond the budget's share of that time.
        var openingSeconds: Double
        var openingExcess: Double
        var twoSeconds: (over: Double, under: Double)?
        var tenSeconds: (over: Double, under: Double)?
        /// Bytes per second after the opening.
        var averageRate: Double
        var crashMilliseconds: [Double]
        /// The same from the send's call: with the commit it waits for.
        var crashFromCallMilliseconds: [Double]
        var crashMissing: Int
        /// Seconds the backlog's class waited for the budget, as `logctl status` counts them.
        var throttledSeconds: Double
        var backlogWriteSeconds: Double
    }

    /// Runs the drain once; `records` smaller for a quick look (`logshipd-bench throttle --records 40000`).
    static func run(records: Int = records) async throws -> Outcome {
        let receiver = try await RequestLogReceiver(delay: receiverDelay)
        let daemon = try await TargetScenarios.Daemon.start(
            url: RequestLogReceiver.url(port: receiver.port, sender: 0), batch: 1000,
            upload: ["rate: {bytes_per_second: \(budget), burst_seconds: \(burstSeconds)}"])
        try await daemon.control(.pause)
        let writing = ContinuousClock.now
        // RFC 3164 lines of about 80 bytes, each a record of about 374 bytes as uploaded.
        try await PeerComparison.generate(lines: records, to: daemon.stream) {
            "<14>Nov 22 10:00:00 web-17 app[4242]: backlog record \($0) of the throttle bench\n"
        }
        try await eventually(within: .seconds(300)) { try await daemon.status().received >= records }
        let backlogWriteSeconds = (ContinuousClock.now - writing).seconds
        // A quiet spell of more than `burst_seconds` since the daemon started (its bucket starts empty): what an
        // operator's daemon has before a backlog drains, so that the opening is the one the issue allows.
        try await Task.sleep(until: writing + .seconds(burstSeconds + 1))

        try await daemon.control(.resume)
        let resumed = ContinuousClock.now
        let probes = CrashProbes(every: crashInterval, control: "\(daemon.directory)/control.sock")
        var failure: (any Error)?
        do {
            // 100 s at the budget; four times that before giving up.
            try await receiver.waitFor(backlogLines: records, within: .seconds(max(60, Double(records) / 1000)))
        } catch {
            failure = error
        }
        await probes.stop()
        await probes.waitForArrivals(at: receiver, within: .seconds(10))
        let status = try await daemon.status()
        try await daemon.stop()
        await receiver.shutdown()
        receiver.dump("throttle.csv", from: resumed)
        if let failure { throw failure }

        let requests = receiver.requests
        let backlog = requests.filter { $0.lines > $0.probes.count }
        guard let start = backlog.first?.arrivedAt, let end = backlog.last?.arrivedAt else {
            throw WaitTimeout(description: "no request arrived")
        }
        let drain = requests.filter { $0.arrivedAt >= start && $0.arrivedAt <= end }
        let windows = RateWindows(drain.map { (($0.arrivedAt - start).seconds, $0.bodyBytes) })
        let seconds = (end - start).seconds
        let median = PeerComparison.median(backlog.map { Double($0.bodyBytes) })
        let opened = backlog.first { Double($0.bodyBytes) <= median }.map { ($0.arrivedAt - start).seconds } ?? 0
        let steady = opened...seconds
        let crash = probes.latencies(at: receiver)
        return Outcome(
            records: records, bytes: drain.reduce(0) { $0 + $1.bodyBytes }, requests: drain.count, seconds: seconds,
            firstRequestBytes: backlog[0].bodyBytes,
            opening: Double(windows.bytes(from: 0, to: 2)) / Double(2 * budget) - 1, openingSeconds: opened,
            openingExcess: Double(windows.bytes(from: 0, to: opened)) - Double(budget) * opened,
            twoSeconds: windows.worst(length: 2, within: steady, budget: Double(budget)),
            tenSeconds: windows.worst(length: 10, within: steady, budget: Double(budget)),
            averageRate: Double(windows.bytes(from: opened, to: seconds)) / (seconds - opened),
            crashMilliseconds: crash.milliseconds,
            crashFromCallMilliseconds: probes.latencies(at: receiver, fromCall: true).milliseconds,
            crashMissing: crash.missing,
            throttledSeconds: status.throttledSeconds["info"] ?? 0, backlogWriteSeconds: backlogWriteSeconds)
    }

    /// The table's rows for BENCHMARKS.md, printed as they go there.
    static func rows(_ outcome: Outcome) -> [String] {
        func percent(_ value: Double) -> String { String(format: "%+.1f%%", value * 100) }
        func worst(_ window: (over: Double, under: Double)?) -> String {
            guard let window else { return "drain too short" }
            return "\(percent(window.over)) / \(percent(-window.under))"
        }
        let worstTwo = outcome.twoSeconds.map { max($0.over, $0.under) } ?? .infinity
        let worstTen = outcome.tenSeconds.map { max($0.over, $0.under) } ?? .infinity
        let p99 = CrashProbes.percentile(outcome.crashMilliseconds, 0.99)
        let p99Bound = receiverDelay.seconds * 1000 + 10
        return [
            "| measure | figure | bound (issue 30) | within |",
            "|---|---|---|---|",
            String(format: "| drain | %@ records, %.1f MB in %d requests, %.1f s (backlog written in %.1f s) "
                       + "| — | — |",
                   ThrottlingReport.grouped(outcome.records), Double(outcome.bytes) / 1e6, outcome.requests,
                   outcome.seconds, outcome.backlogWriteSeconds),
            "| worst 2-second window after the opening (most above / most below) | \(worst(outcome.twoSeconds)) "
                + "| ±20% | \(worstTwo <= 0.2 ? "yes" : "no") |",
            "| worst 10-second window after the opening | \(worst(outcome.tenSeconds)) "
                + "| ±5% | \(worstTen <= 0.05 ? "yes" : "no") |",
            String(format: "| opening: the 2 s from the first request (first request %.0f kB) | %@ "
                       + "| the bucket's burst (%.0f s of budget) on top | — |",
                   Double(outcome.firstRequestBytes) / 1e3, percent(outcome.opening), burstSeconds),
            String(format: "| opening: until a request no larger than the median, beyond the budget's share "
                       + "| %.1f s, %.2f MB | the bucket held %.2f MB | — |",
                   outcome.openingSeconds, outcome.openingExcess / 1e6, Double(budget) * burstSeconds / 1e6),
            String(format: "| average after the opening | %.3f MB/s (%.3f× the budget) | — | — |",
                   outcome.averageRate / 1e6, outcome.averageRate / Double(budget)),
            String(format: "| crash record, send returned → arrived, receiver at %.0f ms (%d probes, %d missing) "
                       + "| p50 %.1f ms, p99 %.1f ms, max %.1f ms | p99 ≤ %.0f ms | %@ |",
                   receiverDelay.seconds * 1000, outcome.crashMilliseconds.count, outcome.crashMissing,
                   CrashProbes.percentile(outcome.crashMilliseconds, 0.5), p99, outcome.crashMilliseconds.max() ?? 0,
                   p99Bound, p99 <= p99Bound && outcome.crashMissing == 0 ? "yes" : "no"),
            String(format: "| the same from the send's call (the commit included) "
                       + "| p50 %.1f ms, p99 %.1f ms, max %.1f ms | — | — |",
                   CrashProbes.percentile(outcome.crashFromCallMilliseconds, 0.5),
                   CrashProbes.percentile(outcome.crashFromCallMilliseconds, 0.99),
                   outcome.crashFromCallMilliseconds.max() ?? 0),
            String(format: "| seconds the backlog waited for the budget (`throttledSeconds.info`) | %.1f | — | — |",
                   outcome.throttledSeconds),
        ]
    }
}
