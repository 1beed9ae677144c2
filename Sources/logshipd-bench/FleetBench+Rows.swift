import Foundation

extension FleetBench {
    /// The table's rows for BENCHMARKS.md: logshipd and syslog-ng side by side, against the targets
    /// (whether logshipd met each).
    static func rows(_ ours: Outcome, _ peer: Outcome?) -> [String] {
        let setup = ours.setup
        func share(_ counts: (refused: Int, of: Int)) -> Double { Double(counts.refused) / Double(max(1, counts.of)) }
        func met(_ yes: Bool) -> String { yes ? "met" : "missed" }
        func row(_ label: String, _ figure: (Outcome) -> String, target: String) -> String {
            "| \(label) | \(figure(ours)) | \(peer.map(figure) ?? "not run") | \(target) |"
        }
        let drainRatio = ours.drainSeconds.map { $0 / setup.ideal } ?? .infinity
        let p99 = CrashProbes.percentile(ours.crashMilliseconds, 0.99)
        return [
            "| | logshipd | syslog-ng | target (issue 30); logshipd |",
            "|---|---|---|---|",
            row("drain: from the return to the last backlog line taken", { outcome in
                guard let seconds = outcome.drainSeconds else {
                    return String(
                        format: "not within %.0f s (%d of %d lines taken)", 4 * setup.ideal, outcome.taken, setup.lines)
                }
                return String(format: "%.1f s, %.2f× the ideal", seconds, seconds / setup.ideal)
            }, target: "≤ 1.3× the ideal (\(Int(setup.ideal)) s); \(met(drainRatio <= 1.3))"),
            row(
                "429s among requests from \(Int(setup.convergence)) s after the return to the end of the drain",
                { outcome in
                    String(format: "%.1f%% (%d of %d)", 100 * share(outcome.refusedAfterConvergence),
                           outcome.refusedAfterConvergence.refused, outcome.refusedAfterConvergence.of)
                }, target: "< 5%; \(met(share(ours.refusedAfterConvergence) < 0.05))"),
            row("429s among all requests", { outcome in
                String(
                    format: "%.1f%% (%d of %d)", 100 * share(outcome.refused), outcome.refused.refused,
                    outcome.refused.of)
            }, target: "—"),
            row(
                "first request per shipper after the return: min / median / max", { spread($0.firstTried) },
                target: "—"),
            row("first request taken per shipper: min / median / max", { spread($0.firstTaken) }, target: "—"),
            row(
                "crash record of one shipper, every \(Int(setup.crashInterval.seconds * 1000)) ms: "
                    + "sent → taken, p50 / p99",
                { outcome in
                    String(format: "%.0f / %.0f ms (max %.0f; %d probes, %d missing)",
                           CrashProbes.percentile(outcome.crashMilliseconds, 0.5),
                           CrashProbes.percentile(outcome.crashMilliseconds, 0.99),
                           outcome.crashMilliseconds.max() ?? 0, outcome.crashMilliseconds.count,
                           outcome.crashMissing)
                }, target: "p99 < 1 s; \(met(p99 < 1000 && ours.crashMissing == 0))"),
            row("the same, sent once that shipper had had a backlog request taken", { outcome in
                String(format: "%.0f / %.0f ms (%d probes)",
                       CrashProbes.percentile(outcome.crashInContactMilliseconds, 0.5),
                       CrashProbes.percentile(outcome.crashInContactMilliseconds, 0.99),
                       outcome.crashInContactMilliseconds.count)
            }, target: "—"),
            row("outage as the shippers saw it (the last backlog spooled … the first line written)", { outcome in
                String(format: "%.0f–%.0f s", outcome.outageSeen.lowerBound, outcome.outageSeen.upperBound)
            }, target: "30 s"),
        ]
    }

    /// `min / median / max` of seconds, and how many shippers they cover.
    private static func spread(_ seconds: [Double]) -> String {
        guard !seconds.isEmpty else { return "none" }
        return String(format: "%.1f / %.1f / %.1f s (%d shippers)", seconds.min()!, PeerComparison.median(seconds),
                      seconds.max()!, seconds.count)
    }
}
