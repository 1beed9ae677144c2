import ArgumentParser
import Foundation

/// `logshipd-bench`: with no arguments everything `make bench` runs; a subcommand runs one measurement by name.
@main
struct BenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logshipd-bench",
        abstract: "Measure logshipd's throughput, latency and memory, with syslog-ng and rsyslog side by side.",
        discussion: """
            Runs against receivers on loopback. Figures vary with the machine: compare the ratios within one run.
            `peers` rewrites BENCHMARKS.md. Release builds only give figures worth comparing (`make bench`).
            """,
        subcommands: [
            All.self, Peers.self, Peer.self, Target.self, Spool.self, CrashLatency.self, Journal.self, Formats.self,
            DeliveryFormats.self, CacheBudget.self, Arenas.self, RestartMemory.self, IntakeCostCommand.self,
            Throttle.self, Fleet.self, Link.self,
        ],
        defaultSubcommand: All.self)

    /// Says which of the allocator's variables the environment sets, then runs: every logshipd the bench starts
    /// inherits them, the rows marked "default" included.
    static func main() async {
        for name in ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"] {
            guard let value = ProcessInfo.processInfo.environment[name] else { continue }
            FileHandle.standardError.write(Data(
                "logshipd-bench: \(name)=\(value) reaches every logshipd started, its defaults' rows included\n".utf8))
        }
        await main(nil)
    }

    struct All: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Everything below, in order (what `make bench` runs).")
        func run() async throws { try await Benchmark.runAll() }
    }

    struct Peers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "logshipd, syslog-ng and rsyslog side by side, then target scenarios 4–6; writes "
                + "BENCHMARKS.md.")
        func run() async throws { try await Benchmark.compareAndReport() }
    }

    struct Peer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One run of one peer scenario for one shipper, printing its pid first (for a profiler).",
            discussion: PeerComparison.scenarios.map(\.title).joined(separator: "\n"))

        @Argument(help: "The shipper to run.")
        var shipper: PeerComparison.Shipper

        @Argument(help: "The scenario: \(PeerComparison.scenarios.map { "\($0.number)" }.joined(separator: ", ")).")
        var scenario: Int

        @Option(help: "logshipd's spool.max_cache_bytes in bytes; its default when not given.")
        var cacheBytes: Int?

        func run() async throws {
            try await PeerComparison.runOnce(shipper, scenario: scenario, settings: .init(cacheBytes: cacheBytes))
        }
    }

    struct Target: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One target scenario without a peer: 4 intake alone, 5 crash latency, 6 memory.")

        @Argument(help: "The scenario, 4 to 6.")
        var scenario: Int

        func run() async throws { try await TargetScenarios.runOnce(scenario) }
    }

    struct Spool: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Intake and delivery rates with the memory and the SQLite spool side by side.")
        func run() async throws { try await Benchmark.printSpoolRates() }
    }

    struct CrashLatency: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "crash-latency", abstract: "A crash record behind 5 000 info records, receiver at 100 ms.")
        func run() async throws { try await Benchmark.printCrashLatency() }
    }

    struct Journal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Journal entries read and delivered, beside systemd-journal-upload.")
        func run() async throws { try await Benchmark.printJournalRates() }
    }

    struct Formats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What each upload format costs: bytes on the wire and CPU per batch, "
                + "uncompressed, gzip and zstd.")
        func run() throws { try Benchmark.printFormatCosts() }
    }

    struct DeliveryFormats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delivery-formats",
            abstract: "Each format's encoding cost and its delivery end to end beside NDJSON; "
                + "writes BENCHMARKS.md's formats.")
        func run() async throws { try await Benchmark.reportFormats() }
    }

    struct CacheBudget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cache-budget",
            abstract: "Scenarios 7, 2, 3 with delivery caches of 1, 4, 16 MiB; writes BENCHMARKS.md.")
        func run() async throws { try await MemoryTrade.deliveryCache.report() }
    }

    struct Arenas: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Scenarios 7, 2, 3 with 1, 2 and 8 malloc arenas; writes BENCHMARKS.md.")
        func run() async throws { try await MemoryTrade.allocatorArenas.report() }
    }

    struct RestartMemory: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restart-memory", abstract: "Resident memory at start, empty and with 100 000 pending.")
        func run() async throws { try await Benchmark.printRestartMemory() }
    }

    struct Throttle: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One host, a 1 MB/s budget: a 100 MB backlog's windows and crash latency; "
                + "writes BENCHMARKS.md's Throttling.")

        @Option(help: "Backlog records (320 bytes each as uploaded); BENCHMARKS.md only at the default.")
        var records = ThrottleBench.records

        func run() async throws { try await ThrottlingReport.runOneHost(records: records) }
    }

    struct Fleet: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "50 daemons after a 30 s outage against a 20 000 lines/s receiver, beside syslog-ng; "
                + "writes BENCHMARKS.md's Throttling.")

        @Option(help: "Shippers; BENCHMARKS.md only at the default.")
        var senders = 50

        @Option(help: "Records each; BENCHMARKS.md only at the default.")
        var backlog = 20_000

        @Option(help: "Seconds: logshipd's upload.retry_max, syslog-ng's time-reopen().")
        var retryMax = FleetBench.Setup().retryMax

        @Option(help: "Seconds the receiver is down after the backlogs are in.")
        var outage = 30

        @Flag(help: "Run logshipd's fleet alone, without syslog-ng's; BENCHMARKS.md is not written.")
        var logshipdOnly = false

        func run() async throws {
            var setup = FleetBench.Setup()
            setup.senders = senders
            setup.backlog = backlog
            setup.retryMax = retryMax
            setup.outage = .seconds(outage)
            try await ThrottlingReport.runFleet(setup, peer: !logshipdOnly)
        }
    }

    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Random 503s at 0, 5 and 20%, and a receiver of 20 000 lines/s with 429 above; "
                + "writes BENCHMARKS.md's control loop.")

        @Option(help: "Runs of each.")
        var runs = 3

        func run() async throws { try await LinkBench.report(runs: runs) }
    }

    struct IntakeCostCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "intake-cost",
            abstract: "What a socket line costs before the spool, on one thread (run it under callgrind).")
        func run() { IntakeCost.run() }
    }
}

extension PeerComparison.Shipper: ExpressibleByArgument {}

/// A measurement asked for that does not exist.
struct BenchmarkUsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
