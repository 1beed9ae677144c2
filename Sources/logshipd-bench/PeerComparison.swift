import Foundation
import LogShip
import LogShipTestKit
import NIOPosix

/// logshipd and syslog-ng 3.38 (`http()` destination) side by side in one run: the same generator, the same
/// counting receiver on loopback, the same batch limit, two requests in flight, runs interleaved, medians.
///
/// Both are child processes, so their CPU time and peak memory come from `/proc`.
enum PeerComparison {
    enum Shipper: String, CaseIterable {
        case syslogNG = "syslog-ng"
        case logshipd
    }

    /// One run of one shipper.
    struct Run {
        var linesPerSecond: Double
        var cpuMicrosecondsPerLine: Double
        /// The daemon's peaks over the run, from the first line written until the last was counted.
        var memory: MemorySampler.Peak
    }

    /// Runs per shipper and scenario. The issue asks for at least three; five, because syslog-ng's rate moves by a
    /// third between runs on a shared machine, and its median decides the ratios.
    static let runs = 5

    static let syslogNG = "/usr/sbin/syslog-ng"
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// What the comparison found: the table's rows, how each scenario fares against its target, and
    /// syslog-ng's batched rate (the yardstick of the intake scenario).
    struct Outcome {
        var table: [String] = []
        var targets: [TargetScenarios.Row] = []
        var peerBatchedRate: Double?
        /// The first figure of /proc/loadavg before the first run: how busy the shared machine was.
        var loadAverage = BenchmarkReport.loadAverage()
    }

    /// Runs every scenario and prints the table.
    static func run() async throws -> Outcome {
        guard FileManager.default.isExecutableFile(atPath: syslogNG) else {
            print("syslog-ng is not installed: make bench installs it (syslog-ng-core, syslog-ng-mod-http)")
            return Outcome()
        }
        var outcome = Outcome()
        var table: [String] = [
            "| scenario | syslog-ng lines/s | logshipd lines/s | ratio | syslog-ng µs CPU/line | logshipd µs CPU/line "
                + "| CPU ratio | peak RssAnon MiB (syslog-ng / logshipd) | RssAnon ratio | PSS at that peak MiB "
                + "| peak RSS MiB |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        print("side by side with syslog-ng, \(runs) interleaved runs each, medians (min–max):")
        for scenario in scenarios {
            var results: [Shipper: [Run]] = [:]
            for _ in 0..<runs {
                for shipper in Shipper.allCases {
                    results[shipper, default: []].append(try await measure(shipper, scenario))
                }
            }
            let peer = results[.syslogNG]!, ours = results[.logshipd]!
            let row = "| \(scenario.title) | \(summary(peer.map(\.linesPerSecond))) | \(summary(ours.map(\.linesPerSecond))) | "
                + String(format: "%.2f", median(ours.map(\.linesPerSecond)) / median(peer.map(\.linesPerSecond)))
                + " | \(summary(peer.map(\.cpuMicrosecondsPerLine), decimals: 1)) | \(summary(ours.map(\.cpuMicrosecondsPerLine), decimals: 1)) | "
                + String(format: "%.2f", median(ours.map(\.cpuMicrosecondsPerLine)) / median(peer.map(\.cpuMicrosecondsPerLine)))
                + " | " + memoryColumns(peer: peer, ours: ours) + " |"
            print("  " + row)
            table.append(row)
            let rateRatio = median(ours.map(\.linesPerSecond)) / median(peer.map(\.linesPerSecond))
            let cpuRatio = median(ours.map(\.cpuMicrosecondsPerLine)) / median(peer.map(\.cpuMicrosecondsPerLine))
            let anonymous = (peer: median(peer.map(\.memory.anonymous)), ours: median(ours.map(\.memory.anonymous)))
            let resident = (peer: median(peer.map(\.memory.resident)), ours: median(ours.map(\.memory.resident)))
            let memoryRatio = anonymous.ours / anonymous.peer
            let target = scenario.target
            var measured = String(format: "%.2f× syslog-ng's lines/s", rateRatio)
            if target.cpu != nil { measured += String(format: ", %.2f× its CPU per line", cpuRatio) }
            if target.memory != nil {
                measured += String(
                    format: ", %.2f× its peak RssAnon (%.1f against %.1f MiB; peak RSS %.2f×)", memoryRatio,
                    anonymous.ours, anonymous.peer, resident.ours / resident.peer)
            }
            if scenario.receiverDelay > .zero {
                // With two requests in flight and the same batch limit, no shipper delivers more than this; the
                // target is within reach only while the peer stays below it by the ratio asked for.
                let ceiling = Double(2 * scenario.batch) / scenario.receiverDelay.seconds
                measured += String(
                    format: " (two requests of %d per %.0f ms allow at most %.0f lines/s: %.2f× syslog-ng's rate)",
                    scenario.batch, scenario.receiverDelay.seconds * 1000, ceiling,
                    ceiling / median(peer.map(\.linesPerSecond)))
            }
            outcome.targets.append(TargetScenarios.Row(
                scenario: scenario.title,
                measured: measured,
                target: String(format: "≥ %.1f×", target.rate) + (target.cpu.map { String(format: ", CPU ≤ %.1f×", $0) } ?? "")
                    + (target.memory.map { String(format: ", peak RssAnon ≤ %.1f×", $0) } ?? ""),
                met: rateRatio >= target.rate && target.cpu.map { cpuRatio <= $0 } ?? true
                    && target.memory.map { memoryRatio <= $0 } ?? true))
            if scenario.number == 1 { outcome.peerBatchedRate = median(peer.map(\.linesPerSecond)) }
        }
        outcome.table = table
        return outcome
    }

    /// One run of the scenario numbered `number` for one shipper, printed with the daemon's pid first so that a
    /// profiler can attach: `logshipd-bench peer logshipd 2`; logshipd with `settings`.
    static func runOnce(_ shipper: Shipper, scenario number: Int, settings: LogshipdSettings = .init()) async throws {
        let scenario = try PeerComparison.scenario(number)
        let run = try await measure(shipper, scenario, settings: settings) { pid in
            print("pid \(pid)")
            fflush(nil)
        }
        print(String(
            format: "%@ %@: %.0f lines/s, %.1f µs CPU/line, peak RssAnon %.1f MiB (PSS %.1f then), peak RSS %.1f MiB",
            shipper.rawValue, scenario.title, run.linesPerSecond, run.cpuMicrosecondsPerLine, run.memory.anonymous,
            run.memory.proportional, run.memory.resident))
    }

    /// The memory columns of a table row, medians of each figure: peak RssAnon (syslog-ng / logshipd), their
    /// ratio, PSS at that peak, peak RSS.
    static func memoryColumns(peer: [Run], ours: [Run]) -> String {
        let anonymous = (median(peer.map(\.memory.anonymous)), median(ours.map(\.memory.anonymous)))
        return String(
            format: "%.1f / %.1f | %.2f | %.1f / %.1f | %.1f / %.1f",
            anonymous.0, anonymous.1, anonymous.1 / anonymous.0,
            median(peer.map(\.memory.proportional)), median(ours.map(\.memory.proportional)),
            median(peer.map(\.memory.resident)), median(ours.map(\.memory.resident)))
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

    /// Starts `shipper` against a fresh receiver, writes the scenario's lines to its stream socket, and times
    /// until the receiver has counted them all.
    ///
    /// - Parameter settings: What logshipd runs with beyond the comparison's configuration.
    static func measure(
        _ shipper: Shipper, _ scenario: Scenario, settings: LogshipdSettings = .init(),
        started: (pid_t) -> Void = { _ in }
    ) async throws -> Run {
        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try await CountingReceiver(delay: scenario.receiverDelay)
        let stream = "\(directory)/ingest.sock"
        let process = switch shipper {
        case .logshipd:
            try startLogshipd(directory: directory, url: receiver.url, batch: scenario.batch, settings: settings)
        case .syslogNG: try startSyslogNG(directory: directory, url: receiver.url, batch: scenario.batch)
        }
        try await waitUntil(within: .seconds(60)) { acceptsStreamConnections(stream) }
        started(process.pid)
        let cpuBefore = try cpuSeconds(process.pid)
        let sampler = MemorySampler(pid: process.pid)
        let start = ContinuousClock.now
        try await generate(lines: scenario.lines, to: stream)
        try await receiver.waitFor(lines: scenario.lines, within: .seconds(600))
        let elapsed = ContinuousClock.now - start
        let cpu = try cpuSeconds(process.pid) - cpuBefore
        let peak = sampler.stop()
        process.signal(SIGTERM)
        _ = try await process.wait(within: .seconds(60))
        await receiver.shutdown()
        return Run(
            linesPerSecond: Double(scenario.lines) / elapsed.seconds,
            cpuMicrosecondsPerLine: cpu / Double(scenario.lines) * 1_000_000, memory: peak)
    }

    /// What logshipd runs with beyond the comparison's configuration, for a table of a setting's trade
    /// (``MemoryTrade``).
    struct LogshipdSettings {
        /// `spool.max_cache_bytes`; its default when `nil`.
        var cacheBytes: Int?
        /// Variables added to its environment.
        var environment: [String: String] = [:]
    }

    static func startLogshipd(
        directory: String, url: String, batch: Int, format: UploadFormat = .ndjson, settings: LogshipdSettings = .init()
    ) throws -> ChildProcess {
        let configuration = try TargetScenarios.Daemon.configure(
            directory: directory, url: url, batch: batch, format: format, cacheBytes: settings.cacheBytes)
        return try ChildProcess(Binaries.logshipd, ["--config", configuration], environment: settings.environment)
    }

    static func startSyslogNG(directory: String, url: String, batch: Int) throws -> ChildProcess {
        let template = try String(
            contentsOf: packageRoot.appendingPathComponent("bench/syslog-ng-http.conf"), encoding: .utf8)
        let configuration = "\(directory)/syslog-ng.conf"
        try template
            .replacingOccurrences(of: "@STREAM@", with: "\(directory)/ingest.sock")
            .replacingOccurrences(of: "@DATAGRAM@", with: "\(directory)/ingest.dgram")
            .replacingOccurrences(of: "@URL@", with: url)
            .replacingOccurrences(of: "@BATCH@", with: String(batch))
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        return try ChildProcess(syslogNG, [
            "-F", "-e", "-f", configuration, "--no-caps", "-R", "\(directory)/persist", "-p", "\(directory)/pid",
            "-c", "\(directory)/ctl",
        ])
    }

    /// Writes `lines` RFC 3164 lines over one stream connection, in 64 KiB writes, on a thread of `pool`: by
    /// default access-log lines of about 120 bytes, or what `line` makes of each line's index.
    static func generate(
        lines: Int, to path: String, on pool: NIOThreadPool = .singleton,
        line: @escaping @Sendable (Int) -> String = {
            "<14>Nov 22 10:00:00 web-17 nginx[4242]: GET /api/v1/orders/\($0) 200 12ms user=u\($0 % 500) agent=curl/8.5.0\n"
        }
    ) async throws {
        try await pool.runIfActive {
            let client = try UnixClient(path: path, type: .stream)
            var chunk: [UInt8] = []
            chunk.reserveCapacity(70_000)
            for index in 0..<lines {
                chunk += Array(line(index).utf8)
                if chunk.count > 65_000 || index == lines - 1 {
                    try client.write(chunk)
                    chunk.removeAll(keepingCapacity: true)
                }
            }
        }
    }

    private static func acceptsStreamConnections(_ path: String) -> Bool {
        (try? UnixClient(path: path, type: .stream)) != nil
    }

    /// User and system CPU time of `pid` so far, from /proc/PID/stat.
    static func cpuSeconds(_ pid: pid_t) throws -> Double {
        try ProcessStat(path: "/proc/\(pid)/stat").cpuTicks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// BENCHMARKS.md: both tables, the machine, how busy it was and the date; the file's other sections are kept.
    static func write(_ table: [String], targets: [TargetScenarios.Row], loadAverage: String) throws {
        let model = BenchmarkReport.cpuModel()
        let date = ISO8601DateFormatter().string(from: Date())
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let memory = ProcessInfo.processInfo.physicalMemory >> 30
        let text = """
            # Benchmarks

            Written by `make bench` (`logshipd-bench`, release build) on \(date): \(cores) cores, \(model),
            \(memory) GiB, load average \(loadAverage) before it started. Absolute figures drift
            between runs on shared machines; compare the ratios, which come from one run.

            ## Side by side with syslog-ng

            syslog-ng 3.38 with its `http()` destination (`bench/syslog-ng-http.conf`: two workers, the same
            batch limit, flow control) and logshipd with its durable SQLite spool, two requests in flight. The same
            generator writes RFC 3164 lines of about 120 bytes over one stream connection; the same counting receiver on
            loopback answers. A run is timed from the first write until the receiver has counted every line; CPU time
            (user + system) and memory are the daemon's own, from /proc. \(runs) runs each, interleaved; median
            (min–max). Ratios are logshipd / syslog-ng: above 1 is better for lines/s, below 1 for CPU and memory.

            Memory as the host feels it: `RssAnon` is what the daemon owns (heap, stacks, relocated data), sampled
            every 20 ms from `/proc/PID/status` over the run, its peak; PSS (`/proc/PID/smaps_rollup`) is read at
            that peak and charges shared pages in parts; peak RSS (`VmHWM`) also counts the program's and libraries'
            file pages, which belong to the page cache: shared, and dropped by the kernel under pressure. Medians of
            each figure.

            \(table.joined(separator: "\n"))

            ## Against the targets

            Scenarios 1–3 and 7 from the table above; 4–6 measured in the same run, logshipd alone (release binary, durable
            spool), 4 and 5 \(TargetScenarios.runs) times each: median (min–max). Crash latency runs from `logctl send`
            returning (the record is committed) to the receiver reading the request's head. Targets from the issue
            that set them; ratios are the ones that count.

            | scenario | measured | target | met |
            |---|---|---|---|
            \(targets.map { "| \($0.scenario) | \($0.measured) | \($0.target) | \($0.met ? "yes" : "no") |" }.joined(separator: "\n"))

            """ + BenchmarkReport.sections(besides: ["Side by side with syslog-ng", "Against the targets"])
        try text.write(to: BenchmarkReport.url, atomically: true, encoding: .utf8)
        print("  written to BENCHMARKS.md")
    }
}
