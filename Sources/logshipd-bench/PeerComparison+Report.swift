import Foundation

extension PeerComparison {
    /// One shipper's runs of one scenario by their medians.
    struct Medians {
        var shipper: Shipper
        var runs: [Run]

        var rate: Double { median(runs.map(\.linesPerSecond)) }
        var cpu: Double { median(runs.map(\.cpuMicrosecondsPerLine)) }
        var sleeps: Double { median(runs.map(\.sleepsPerLine)) }
        var anonymous: Double { median(runs.map(\.memory.anonymous)) }
        var proportional: Double { median(runs.map(\.memory.proportional)) }
        var resident: Double { median(runs.map(\.memory.resident)) }
    }

    static let tableHead = [
        "| scenario | shipper | lines/s | logshipd ÷ it | µs CPU/line | logshipd ÷ it | sleeps/line "
            + "| peak RssAnon MiB | logshipd ÷ it | PSS at that peak MiB | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    /// A table row: `shipper`'s medians (min–max), and for a peer logshipd's figures divided by its; the scenario's
    /// title on its first row only.
    static func row(_ scenario: Scenario, _ shipper: Medians, against ours: Medians, first: Bool) -> String {
        let ratios = shipper.shipper == .logshipd
            ? ["", "", ""]
            : [ours.rate / shipper.rate, ours.cpu / shipper.cpu, ours.anonymous / shipper.anonymous]
                .map { String(format: "%.2f", $0) }
        // rsyslog holds what it has read and not yet delivered in memory; the others do not read more than they
        // can queue (syslog-ng's flow control) or keep it on disk (logshipd's spool).
        let queue = shipper.shipper == .rsyslog ? " (its queue in memory)" : ""
        let cells = [
            first ? scenario.title : "", shipper.shipper.rawValue, summary(shipper.runs.map(\.linesPerSecond)),
            ratios[0], summary(shipper.runs.map(\.cpuMicrosecondsPerLine), decimals: 1), ratios[1],
            String(format: "%.2f", shipper.sleeps), String(format: "%.1f", shipper.anonymous), ratios[2],
            String(format: "%.1f", shipper.proportional),
            String(format: "%.1f", shipper.resident) + queue,
        ]
        return "| " + cells.joined(separator: " | ") + " |"
    }

    /// How logshipd fares in `scenario` against `target`, set for `peer`.
    static func targetRow(_ scenario: Scenario, _ target: Target, peer: Medians, ours: Medians) -> TargetScenarios.Row {
        let name = peer.shipper.rawValue
        let rateRatio = ours.rate / peer.rate, cpuRatio = ours.cpu / peer.cpu
        let memoryRatio = ours.anonymous / peer.anonymous
        var measured = String(format: "%.2f× \(name)'s lines/s", rateRatio)
        if target.cpu != nil {
            measured += String(
                format: ", %.2f× its CPU per line (%.1f against %.1f µs)", cpuRatio, ours.cpu, peer.cpu)
        }
        if target.memory != nil {
            measured += String(
                format: ", %.2f× its peak RssAnon (%.1f against %.1f MiB; peak RSS %.2f×)", memoryRatio,
                ours.anonymous, peer.anonymous, ours.resident / peer.resident)
        }
        if scenario.receiverDelay > .zero {
            // With two requests in flight and the same batch limit, no shipper delivers more than this; the target
            // is within reach only while the peer stays below it by the ratio asked for.
            let ceiling = Double(2 * scenario.batch) / scenario.receiverDelay.seconds
            measured += String(
                format: " (two requests of %d per %.0f ms allow at most %.0f lines/s: %.2f× \(name)'s rate)",
                scenario.batch, scenario.receiverDelay.seconds * 1000, ceiling, ceiling / peer.rate)
        }
        return TargetScenarios.Row(
            scenario: "\(scenario.title), against \(name)",
            measured: measured,
            target: String(format: "≥ %.1f×", target.rate)
                + (target.cpu.map { String(format: ", CPU ≤ %.1f×", $0) } ?? "")
                + (target.memory.map { String(format: ", peak RssAnon ≤ %.1f×", $0) } ?? ""),
            met: rateRatio >= target.rate && target.cpu.map { cpuRatio <= $0 } ?? true
                && target.memory.map { memoryRatio <= $0 } ?? true)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    static func summary(_ values: [Double], decimals: Int = 0) -> String {
        let format = "%.\(decimals)f"
        return String(format: format, median(values)) + " (" + String(format: format, values.min()!) + "–"
            + String(format: format, values.max()!) + ")"
    }

    /// The section of BENCHMARKS.md the table goes in.
    static let sectionTitle = "Side by side with syslog-ng and rsyslog"

    /// BENCHMARKS.md: both tables, the machine, how busy it was and the date; the file's other sections are kept.
    static func write(_ table: [String], targets: [TargetScenarios.Row], loadAverage: String) throws {
        let model = BenchmarkReport.cpuModel()
        let date = ISO8601DateFormatter().string(from: Date())
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let memory = ProcessInfo.processInfo.physicalMemory >> 30
        let targetRows = targets.map { "| \($0.scenario) | \($0.measured) | \($0.target) | \($0.met ? "yes" : "no") |" }
        let text = """
            # Benchmarks

            Written by `make bench` (`logshipd-bench`, release build) on \(date): \(cores) cores, \(model),
            \(memory) GiB, load average \(loadAverage) before it started. Absolute figures drift
            between runs on shared machines; compare the ratios, which come from one run.

            ## \(sectionTitle)

            syslog-ng 3.38 with its `http()` destination (`bench/syslog-ng-http.conf`: two workers, the same
            batch limit, flow control); rsyslog 8.2302 with omelasticsearch (`bench/rsyslog-elasticsearch.conf`: two
            workers, bulk requests of the same batch limit, or one request per line where the batch is one), run
            from Debian's packages extracted into `.build-peers/rsyslog`; and logshipd with its durable SQLite
            spool, two requests in flight. The same generator writes RFC 3164 lines of about 120 bytes over one
            stream connection; the same counting receiver on loopback answers, to rsyslog as Elasticsearch would
            (it counts its documents: a bulk body holds two lines per document). A run is timed from the first
            write until the receiver has counted every line; CPU time (user + system) and memory are the daemon's
            own, from /proc. Sleeps per line are the voluntary context switches of the daemon's threads over the run
            (summed from `/proc/PID/task/*/status`), per line: a thread that gives up the CPU to wait for the
            network, a lock or another thread's hand-over, each a sleep and a wake-up. \(runs) runs each,
            interleaved; median (min–max). Ratios are logshipd / the peer: above 1 is better for lines/s, below 1
            for CPU and memory.

            Memory as the host feels it: `RssAnon` is what the daemon owns (heap, stacks, relocated data), sampled
            every 20 ms from `/proc/PID/status` over the run, its peak; PSS (`/proc/PID/smaps_rollup`) is read at
            that peak and charges shared pages in parts; peak RSS (`VmHWM`) also counts the program's and libraries'
            file pages, which belong to the page cache: shared, and dropped by the kernel under pressure. Medians of
            each figure. rsyslog's queues are in memory (`LinkedList`, up to a million messages): it reads lines
            as fast as they come and holds those it has not delivered in RAM, where syslog-ng stops reading when
            its queue is full and logshipd keeps them in its spool on disk.

            \(table.joined(separator: "\n"))

            ## Against the targets

            Scenarios 1–3 and 7 from the table above, against each peer the issues set a target for; 4–6
            measured in the same run, logshipd alone (release binary, durable spool), 4 and 5
            \(TargetScenarios.runs) times each: median (min–max). Crash latency runs from `logctl send` returning
            (the record is committed) to the receiver reading the request's head. Targets from the issue that set
            them; ratios are the ones that count.

            | scenario | measured | target | met |
            |---|---|---|---|
            \(targetRows.joined(separator: "\n"))

            """ + BenchmarkReport.sections(besides: [sectionTitle, "Against the targets"])
        try text.write(to: BenchmarkReport.url, atomically: true, encoding: .utf8)
        print("  written to BENCHMARKS.md")
    }
}
