import Foundation
import LogShip

/// Both sides of the delivery cache's budget (`spool.max_cache_bytes`): logshipd alone in three of the
/// comparison's scenarios, with a budget below, at and above its default, runs interleaved; BENCHMARKS.md's
/// Delivery cache section.
enum CacheBudgetComparison {
    static let budgets = [1 << 20, SQLiteSpool.defaultCacheBytes, 16 << 20]
    static let runs = 3
    /// A million lines batched (the memory target's scenario); one line per request and a receiver answering
    /// after 20 ms, in which a backlog builds.
    static let scenarioNumbers = [7, 2, 3]

    /// Measures every scenario with every budget, prints the table and writes it to BENCHMARKS.md.
    static func report() async throws {
        let load = BenchmarkReport.loadAverage()
        var table = [
            "| scenario | spool.max_cache_bytes | lines/s | µs CPU/line | peak RSS MiB |",
            "|---|---|---|---|---|",
        ]
        print("logshipd with delivery caches of \(budgets.map(ByteCountText.approximate).joined(separator: ", ")), "
            + "\(runs) interleaved runs, medians (min–max):")
        for number in scenarioNumbers {
            let scenario = try PeerComparison.scenario(number)
            var results: [Int: [PeerComparison.Run]] = [:]
            for _ in 0..<runs {
                for budget in budgets {
                    results[budget, default: []].append(
                        try await PeerComparison.measure(.logshipd, scenario, cacheBytes: budget))
                }
            }
            for budget in budgets {
                let runs = results[budget]!
                let isDefault = budget == SQLiteSpool.defaultCacheBytes
                let name = ByteCountText.approximate(budget) + (isDefault ? " (default)" : "")
                let row = "| \(scenario.title) | \(name) | \(PeerComparison.summary(runs.map(\.linesPerSecond))) | "
                    + "\(PeerComparison.summary(runs.map(\.cpuMicrosecondsPerLine), decimals: 2)) | "
                    + "\(PeerComparison.summary(runs.map(\.peakRSSMiB), decimals: 1)) |"
                print("  " + row)
                table.append(row)
            }
        }
        let date = ISO8601DateFormatter().string(from: Date())
        try BenchmarkReport.write(section: "Delivery cache", """
            Written by `logshipd-bench cache-budget` (release build; `make bench` runs it too) on \(date),
            \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(load) before it started.

            `spool.max_cache_bytes` is what the durable spool keeps in memory of the lines it stored, so that
            delivery sends them without reading them back from the file. logshipd alone (the same generator,
            receiver and configuration as beside syslog-ng) with a budget below, at and above its default, \(runs)
            runs with the budgets interleaved, median (min–max). A backlog builds where delivery is slower than
            intake (one line per request, a slow receiver): there a larger cache holds more of it in memory, a
            smaller one reads more of it back.

            \(table.joined(separator: "\n"))
            """)
    }
}
