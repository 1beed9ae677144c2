import Foundation
import LogShip
import LogShipTestKit

/// Every upload format delivered end to end beside NDJSON, in one run: the release logshipd as a child process,
/// the same generator and the same counting receiver as the comparison with syslog-ng, which counts each format's
/// records (``RecordCounting``). Issue 31 asks each format for at most 1.5× NDJSON's CPU per line and at least
/// 0.8× its lines/s.
enum FormatDelivery {
    /// Lines per run, as many as the comparison's batched scenario (CPU time comes in ticks of 10 ms), and its
    /// batch limit.
    static let lines = 200_000
    static let batch = 500
    static let runs = 5

    /// The table's rows, for BENCHMARKS.md, each run's formats interleaved; medians (min–max).
    static func run() async throws -> [String] {
        var results: [UploadFormat: [PeerComparison.Run]] = [:]
        for _ in 0..<runs {
            for format in UploadFormat.allCases {
                results[format, default: []].append(try await measure(format))
            }
        }
        let ndjson = results[.ndjson]!
        let ndjsonRate = PeerComparison.median(ndjson.map(\.linesPerSecond))
        let ndjsonCPU = PeerComparison.median(ndjson.map(\.cpuMicrosecondsPerLine))
        var table = [
            "| format | lines/s | vs ndjson | µs CPU/line | vs ndjson | peak RssAnon MiB | peak RSS MiB "
                + "| within the bound |",
            "|---|---|---|---|---|---|---|---|",
        ]
        print(
            "every format delivered, \(lines) lines in batches of \(batch), "
                + "\(runs) interleaved runs, medians (min–max):")
        for format in UploadFormat.allCases {
            let runs = results[format]!
            let rate = PeerComparison.median(runs.map(\.linesPerSecond)) / ndjsonRate
            let cpu = PeerComparison.median(runs.map(\.cpuMicrosecondsPerLine)) / ndjsonCPU
            let row = "| \(format.rawValue) | \(PeerComparison.summary(runs.map(\.linesPerSecond))) | "
                + String(format: "%.2f", rate)
                + " | \(PeerComparison.summary(runs.map(\.cpuMicrosecondsPerLine), decimals: 2)) | "
                + String(
                    format: "%.2f | %.1f | %.1f", cpu, PeerComparison.median(runs.map(\.memory.anonymous)),
                    PeerComparison.median(runs.map(\.memory.resident)))
                + " | \(rate >= 0.8 && cpu <= 1.5 ? "yes" : "no") |"
            print("  " + row)
            table.append(row)
        }
        return table
    }

    /// Starts logshipd uploading in `format` to a fresh receiver, writes the lines to its stream socket, and times
    /// until the receiver has counted them all.
    static func measure(_ format: UploadFormat) async throws -> PeerComparison.Run {
        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try await CountingReceiver(api: .ingest(RecordCounting(format)))
        let stream = "\(directory)/ingest.sock"
        let process = try PeerComparison.startLogshipd(
            directory: directory, url: receiver.url, batch: batch, format: format)
        return try await PeerComparison.deliver(lines: lines, to: stream, by: process, countedBy: receiver)
    }
}
