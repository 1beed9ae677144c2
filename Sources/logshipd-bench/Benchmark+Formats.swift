import Foundation
import LogShip

extension Benchmark {
    /// What each format costs to encode and to deliver; both tables are printed and go to BENCHMARKS.md.
    static func reportFormats() async throws {
        // A shared machine's other work moves the figures: say how busy it was.
        let load = BenchmarkReport.loadAverage()
        let encoding = try printFormatCosts()
        let delivery = try await FormatDelivery.run()
        try BenchmarkReport.write(section: "Upload formats", """
            Written by `logshipd-bench delivery-formats` (release build; `make bench` runs it too) on \
            \(ISO8601DateFormatter().string(from: Date())),
            \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(load) before it started.

            What each `upload.format` costs. Encoding alone (`logshipd-bench formats`): batches of 1 000 typical
            access-log records encoded (and compressed) by one thread, as the uploader does per request; bytes on the
            wire per record and CPU time.

            \(encoding.joined(separator: "\n"))

            Delivered end to end (`logshipd-bench delivery-formats`): the release logshipd with its durable spool
            uploading in each format to the counting receiver, \
            which counts each format's records; \(FormatDelivery.lines)
            lines of the syslog-ng comparison's generator, \
            batches of \(FormatDelivery.batch), \(FormatDelivery.runs) runs with the
            formats interleaved, median (min–max). CPU time is the daemon's own, from /proc. \
            Bound (issue 31): lines/s at
            least 0.8× NDJSON's, CPU per line at most 1.5× NDJSON's, in the same run. \
            On a shared machine the lines/s ratios
            move with the other load (a daemon short of CPU delivers in proportion to its CPU per line); the CPU ratios
            are the steadier figure.

            \(delivery.joined(separator: "\n"))
            """)
    }

    /// What each `upload.format` costs the sender, uncompressed and with each compression at its default level:
    /// bytes on the wire and CPU time of this thread to encode (and compress) batches of 1 000 typical records, as
    /// the uploader does per request. Returns the figures as a table for BENCHMARKS.md.
    @discardableResult
    static func printFormatCosts() throws -> [String] {
        let batches = 50
        let lines = (0..<1_000).map { index in
            LogRecord(
                timestamp: Timestamp(microsecondsSinceEpoch: 1_795_255_200_000_000 + Int64(index)), priority: .info,
                severity: .informational, host: "web-17.example.internal", source: .socket,
                message: "GET /api/v1/orders/\(index * 7919 % 100_000) 200 \(index % 90 + 3)ms user=u\(index % 500)",
                peer: PeerCredentials(pid: 4242, uid: 33, gid: 33, comm: "nginx"),
                fields: ["syslog_identifier": "nginx", "request_id": "req-\(index * 104_729)"]
            ).ndjsonLine[...]
        }
        // Ids as a spool gives them: one instance, a run of sequences in one class.
        let ids = RecordIDs(
            instance: .random(), priority: .info, sequences: (0..<Int64(lines.count)).map { 1_000_000 + $0 })
        let ndjsonBytes = Double(try UploadFormat.ndjson.encoder.encode(lines, ids: ids).count)
        let compressions = UploadCompression.names.compactMap { UploadCompression(name: $0) }
        var table = [
            "| format | compression | bytes/record | vs ndjson | µs CPU/1000 records |",
            "|---|---|---|---|---|",
        ]
        print("encoding a batch of 1 000 access-log records, \(batches) batches (CPU time of one thread):")
        print("  format     compression    bytes/record   vs ndjson   µs CPU/1000 records")
        for format in UploadFormat.allCases {
            let encoder = format.encoder
            for compression in compressions {
                var bytes = 0
                let start = threadCPUTime()
                for _ in 0..<batches {
                    bytes = try compression.compress(try encoder.encodeBuffer(lines, ids: ids)).readableBytes
                }
                let microseconds = (threadCPUTime() - start) / Double(batches) * 1_000_000
                print("  " + format.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0) + "  "
                    + compression.description.padding(toLength: 13, withPad: " ", startingAt: 0)
                    + String(
                        format: "%12.1f   %9.2f   %19.0f", Double(bytes) / 1_000, Double(bytes) / ndjsonBytes,
                        microseconds))
                table.append("| \(format.rawValue) | \(compression.description) | "
                    + String(
                        format: "%.1f | %.2f | %.0f |", Double(bytes) / 1_000, Double(bytes) / ndjsonBytes,
                        microseconds))
            }
        }
        print("")
        return table
    }
}
