import Foundation
import LogShip
import LogShipTestKit
import NIOPosix

/// logshipd, syslog-ng 3.38 (`http()` destination) and rsyslog 8.2302 (omelasticsearch) side by side in one run:
/// the same generator, the same counting receiver on loopback, the same batch limit, two requests in flight, runs
/// interleaved, medians.
///
/// All are child processes, so their CPU time, context switches and peak memory come from `/proc`.
enum PeerComparison {
    /// One run of one shipper.
    struct Run {
        var linesPerSecond: Double
        var cpuMicrosecondsPerLine: Double
        /// How often the daemon's threads went to sleep per line, its voluntary context switches
        /// (``ProcessSpending``): a request handed from thread to thread costs a sleep and a wake-up at each hand-over.
        var sleepsPerLine: Double
        /// The daemon's peaks over the run, from the first line written until the last was counted.
        var memory: MemorySampler.Peak

        /// `lines` delivered in `elapsed`, the daemon having spent `spent` meanwhile.
        init(lines: Int, in elapsed: Duration, spent: ProcessSpending, memory: MemorySampler.Peak) {
            linesPerSecond = Double(lines) / elapsed.seconds
            cpuMicrosecondsPerLine = spent.cpuSeconds / Double(lines) * 1_000_000
            sleepsPerLine = Double(spent.voluntarySwitches) / Double(lines)
            self.memory = memory
        }
    }

    /// Runs per shipper and scenario. The issue asks for at least three; five, because syslog-ng's rate moves by a
    /// third between runs on a shared machine, and its median decides the ratios.
    static let runs = 5

    static let syslogNG = "/usr/sbin/syslog-ng"
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// What the comparison found: the table's rows, how each scenario fares against its targets, and
    /// syslog-ng's batched rate (the yardstick of the intake scenario).
    struct Outcome {
        var table: [String] = []
        var targets: [TargetScenarios.Row] = []
        var peerBatchedRate: Double?
        /// The first figure of /proc/loadavg before the first run: how busy the shared machine was.
        var loadAverage = BenchmarkReport.loadAverage()
    }

    /// Runs every scenario with every peer there is on this machine, and prints the table.
    static func run() async throws -> Outcome {
        var peers: [Shipper] = []
        for peer in Shipper.peers {
            if let missing = peer.missing { print(missing) } else { peers.append(peer) }
        }
        guard !peers.isEmpty else { return Outcome() }
        var outcome = Outcome()
        var table = tableHead
        print("side by side with \(peers.map(\.rawValue).joined(separator: " and ")), \(runs) interleaved runs each, "
            + "medians (min–max):")
        for scenario in scenarios {
            var results: [Shipper: [Run]] = [:]
            for _ in 0..<runs {
                for shipper in peers + [.logshipd] {
                    results[shipper, default: []].append(try await measure(shipper, scenario))
                }
            }
            let ours = Medians(shipper: .logshipd, runs: results[.logshipd]!)
            for shipper in peers + [.logshipd] {
                let medians = Medians(shipper: shipper, runs: results[shipper]!)
                let row = row(scenario, medians, against: ours, first: shipper == peers.first)
                print("  " + row)
                table.append(row)
                if let target = scenario.targets[shipper] {
                    outcome.targets.append(targetRow(scenario, target, peer: medians, ours: ours))
                }
            }
            if scenario.number == 1, let peer = results[.syslogNG] {
                outcome.peerBatchedRate = median(peer.map(\.linesPerSecond))
            }
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
            format: "%@ %@: %.0f lines/s, %.1f µs CPU/line, %.2f sleeps/line, peak RssAnon %.1f MiB "
                + "(PSS %.1f then), peak RSS %.1f MiB",
            shipper.rawValue, scenario.title, run.linesPerSecond, run.cpuMicrosecondsPerLine, run.sleepsPerLine,
            run.memory.anonymous, run.memory.proportional, run.memory.resident))
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
        let receiver = try await CountingReceiver(
            delay: scenario.receiverDelay, api: shipper == .rsyslog ? .elasticsearch : .ingest(.lines))
        let stream = shipper.streamSocket(in: directory)
        let process = switch shipper {
        case .logshipd:
            try startLogshipd(directory: directory, url: receiver.url, batch: scenario.batch, settings: settings)
        case .syslogNG: try startSyslogNG(directory: directory, url: receiver.url, batch: scenario.batch)
        case .rsyslog: try startRsyslog(directory: directory, port: receiver.port, batch: scenario.batch)
        }
        return try await deliver(
            lines: scenario.lines, to: stream, by: process, countedBy: receiver, started: started)
    }

    /// Waits until `process` accepts connections on `stream`, writes `lines` lines to it, and times until
    /// `receiver` has counted them all; then stops both. CPU time, sleeps and memory are the process's over that
    /// time.
    ///
    /// - Parameter started: Told the process's pid once it accepts connections, before the first line.
    static func deliver(
        lines: Int, to stream: String, by process: ChildProcess, countedBy receiver: CountingReceiver,
        started: (pid_t) -> Void = { _ in }
    ) async throws -> Run {
        try await waitUntil(within: .seconds(60)) { acceptsStreamConnections(stream) }
        started(process.pid)
        let before = try ProcessSpending(pid: process.pid)
        let sampler = MemorySampler(pid: process.pid)
        let start = ContinuousClock.now
        try await generate(lines: lines, to: stream)
        try await receiver.waitFor(lines: lines, within: .seconds(600))
        let elapsed = ContinuousClock.now - start
        let spent = try ProcessSpending(pid: process.pid) - before
        let peak = sampler.stop()
        process.signal(SIGTERM)
        _ = try await process.wait(within: .seconds(60))
        await receiver.shutdown()
        return Run(lines: lines, in: elapsed, spent: spent, memory: peak)
    }

    /// What logshipd runs with beyond the comparison's configuration, for a table of a setting's trade
    /// (``MemoryTrade``).
    struct LogshipdSettings {
        /// `spool.max_cache_bytes`; its default when `nil`.
        var cacheBytes: Int?
        /// Variables added to its environment.
        var environment: [String: String] = [:]
    }

    /// Writes `lines` RFC 3164 lines over one stream connection, in 64 KiB writes, on a thread of `pool`: by
    /// default access-log lines of about 120 bytes, or what `line` makes of each line's index.
    static func generate(
        lines: Int, to path: String, on pool: NIOThreadPool = .singleton,
        line: @escaping @Sendable (Int) -> String = {
            "<14>Nov 22 10:00:00 web-17 nginx[4242]: GET /api/v1/orders/\($0) 200 12ms "
                + "user=u\($0 % 500) agent=curl/8.5.0\n"
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

    /// Whether a stream connection to `path` is accepted: a daemon listening there is ready for lines.
    static func acceptsStreamConnections(_ path: String) -> Bool {
        (try? UnixClient(path: path, type: .stream)) != nil
    }
}
