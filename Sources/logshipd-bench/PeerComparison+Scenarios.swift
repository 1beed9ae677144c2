extension PeerComparison {
    /// One workload run by every shipper, with what the issues ask of logshipd in it.
    struct Scenario {
        /// Its number, as `logshipd-bench peer` takes it; 4 to 6 are the scenarios without a peer
        /// (``TargetScenarios``).
        var number: Int
        var name: String
        var lines: Int
        var batch: Int
        var receiverDelay: Duration
        /// What logshipd must reach against each peer that has a target here.
        var targets: [Shipper: Target]

        var title: String { "\(number) \(name)" }
    }

    /// logshipd's figures as multiples of a peer's in the same run.
    struct Target {
        /// Lines per second, at least.
        var rate: Double
        /// CPU time per line, at most.
        var cpu: Double?
        /// Peak `RssAnon`, the memory the daemon owns, at most.
        var memory: Double?
    }

    /// Issue 11's three, and a million lines delivered with issue 39's bound on the memory the daemon owns; against
    /// rsyslog, issue 43's (point 3).
    static let scenarios = [
        Scenario(
            number: 1, name: "batched (500/POST), 200 000 lines", lines: 200_000, batch: 500, receiverDelay: .zero,
            targets: [.syslogNG: Target(rate: 2.0, cpu: 0.5), .rsyslog: Target(rate: 1.5)]),
        Scenario(
            number: 2, name: "one line per POST, 30 000 lines", lines: 30_000, batch: 1, receiverDelay: .zero,
            targets: [.syslogNG: Target(rate: 1.2), .rsyslog: Target(rate: 1.2, cpu: 1.0)]),
        Scenario(
            number: 3, name: "receiver answers after 20 ms, 100 000 lines", lines: 100_000, batch: 500,
            receiverDelay: .milliseconds(20), targets: [.syslogNG: Target(rate: 1.3)]),
        Scenario(
            number: 7, name: "batched (500/POST), 1 000 000 lines", lines: 1_000_000, batch: 500, receiverDelay: .zero,
            targets: [.syslogNG: Target(rate: 3.0, memory: 2.0), .rsyslog: Target(rate: 1.5)]),
    ]

    /// The scenario numbered `number`.
    ///
    /// - Throws: ``BenchmarkUsageError`` naming the numbers there are.
    static func scenario(_ number: Int) throws -> Scenario {
        guard let scenario = scenarios.first(where: { $0.number == number }) else {
            throw BenchmarkUsageError(
                "no scenario \(number); there are \(scenarios.map { "\($0.number)" }.joined(separator: ", "))")
        }
        return scenario
    }
}
