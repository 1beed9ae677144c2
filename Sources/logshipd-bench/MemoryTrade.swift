import Foundation
import LogShip

/// Both sides of a setting that trades speed for memory: logshipd alone in three of the comparison's scenarios,
/// with the setting at its default and values beside it, runs interleaved; a section of BENCHMARKS.md.
struct MemoryTrade {
    /// One value of the setting, as the table names it and as the daemon gets it.
    struct Variant {
        var name: String
        var settings: PeerComparison.LogshipdSettings
    }

    let section: String
    let command: String
    /// The table's column for the setting.
    let setting: String
    let variants: [Variant]
    /// What the setting is and where the trade lies, above the table.
    let explanation: String

    static let runs = 3
    /// A million lines batched (the memory target's scenario); one line per request and a receiver answering
    /// after 20 ms, in which a backlog builds.
    static let scenarioNumbers = [7, 2, 3]

    static let deliveryCache = MemoryTrade(
        section: "Delivery cache", command: "cache-budget", setting: "spool.max_cache_bytes",
        variants: [1 << 20, SQLiteSpool.defaultCacheBytes, 16 << 20].map { budget in
            let isDefault = budget == SQLiteSpool.defaultCacheBytes
            return Variant(
                name: ByteCountText.approximate(budget) + (isDefault ? " (default)" : ""),
                settings: .init(cacheBytes: budget))
        },
        explanation: """
            `spool.max_cache_bytes` is what the durable spool keeps in memory of the lines it stored, so that
            delivery sends them without reading them back from the file. A backlog builds where delivery is slower
            than intake (one line per request, a slow receiver): there a larger cache holds more of it in memory, a
            smaller one reads more of it back.
            """)

    static let allocatorArenas = MemoryTrade(
        section: "Allocator arenas", command: "arenas", setting: "MALLOC_ARENA_MAX",
        variants: Set([1, 2, 8, MallocTuning.arenas]).sorted().map { arenas in
            // The default without the variable: as the daemon sets it itself, which must happen before a second
            // thread allocates to hold (see `Logshipd.main()`).
            arenas == MallocTuning.arenas
                ? Variant(name: "\(arenas) (default)", settings: .init())
                : Variant(name: "\(arenas)", settings: .init(environment: ["MALLOC_ARENA_MAX": "\(arenas)"]))
        },
        explanation: """
            glibc gives each thread that allocates an arena of its own, up to `MALLOC_ARENA_MAX`, and an arena keeps
            what its thread freed for that thread: records pass through about six threads (event loops, the
            cooperative pool, the spool's writer), and each arena holds its own high-water mark. Fewer arenas hold
            less; with fewer than the busy threads, they wait on each other's locks. An operator's
            `MALLOC_ARENA_MAX` in the environment is kept (see `MallocTuning`).
            """)

    /// Measures every scenario with every variant, prints the table and writes it to BENCHMARKS.md.
    func report() async throws {
        let load = BenchmarkReport.loadAverage()
        var table = [
            "| scenario | \(setting) | lines/s | µs CPU/line | peak RssAnon MiB | PSS at that peak MiB "
                + "| peak RSS MiB |",
            "|---|---|---|---|---|---|---|",
        ]
        let values = variants.map(\.name).joined(separator: ", ")
        print("logshipd with \(setting) \(values), "
            + "\(Self.runs) interleaved runs, medians (min–max):")
        for number in Self.scenarioNumbers {
            let scenario = try PeerComparison.scenario(number)
            var results = [[PeerComparison.Run]](repeating: [], count: variants.count)
            for _ in 0..<Self.runs {
                for (index, variant) in variants.enumerated() {
                    let run = try await PeerComparison.measure(.logshipd, scenario, settings: variant.settings)
                    results[index].append(run)
                }
            }
            for (variant, runs) in zip(variants, results) {
                let row = "| \(scenario.title) | \(variant.name) | "
                    + "\(PeerComparison.summary(runs.map(\.linesPerSecond))) | "
                    + "\(PeerComparison.summary(runs.map(\.cpuMicrosecondsPerLine), decimals: 2)) | "
                    + "\(PeerComparison.summary(runs.map(\.memory.anonymous), decimals: 1)) | "
                    + "\(PeerComparison.summary(runs.map(\.memory.proportional), decimals: 1)) | "
                    + "\(PeerComparison.summary(runs.map(\.memory.resident), decimals: 1)) |"
                print("  " + row)
                table.append(row)
            }
        }
        let date = ISO8601DateFormatter().string(from: Date())
        try BenchmarkReport.write(section: section, """
            Written by `logshipd-bench \(command)` (release build; `make bench` runs it too) on \(date),
            \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(load) before it started.

            \(explanation)
            logshipd alone (the same generator, receiver and configuration as beside syslog-ng, memory measured
            the same way) with \(setting) \(values), \(Self.runs) runs with the values interleaved, median
            (min–max).

            \(table.joined(separator: "\n"))
            """)
    }
}
