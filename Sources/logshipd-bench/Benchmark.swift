import Foundation
import LogShip
import LogShipTestKit
import Logging
import NIOCore

/// The measurements `logshipd-bench` runs: logshipd in-process or as a child process against a loopback
/// receiver, printing throughput and latency.
///
/// Figures depend on the machine; the ratios between runs on one machine are what to compare.
enum Benchmark {
    /// Everything, in the order `make bench` prints it.
    static func runAll() async throws {
        print("logshipd benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, "
            + "\(ProcessInfo.processInfo.physicalMemory >> 30) GiB; loopback receiver; figures vary with the machine,")
        print("compare the ratios within one run")
        print("")
        try await compareAndReport()
        print("")
        try await printSpoolRates()
        print("")
        try await printCrashLatency()
        print("")
        try await printJournalRates()
        try await reportFormats()
        for trade in [MemoryTrade.deliveryCache, .allocatorArenas] { try await trade.report() }
        try await printRestartMemory()
        try await LinkBench.report()
        try await ThrottlingReport.runAll()
    }

    /// Intake and delivery rates with the memory spool and the SQLite spool side by side.
    static func printSpoolRates() async throws {
        print("                                       memory        sqlite    sqlite/memory")
        let socketMemory = try await socketIntakeRate(records: 100_000, spool: .memory)
        let socketSQLite = try await socketIntakeRate(records: 100_000, spool: .sqlite)
        row("intake, stream socket (records/s)", socketMemory, socketSQLite)
        let ackedMemory = try await acknowledgedIntakeRate(records: 50_000, spool: .memory)
        let ackedSQLite = try await acknowledgedIntakeRate(records: 50_000, spool: .sqlite)
        row("intake, acknowledged send (records/s)", ackedMemory, ackedSQLite)
        let deliveredMemory = try await deliveryRate(records: 200_000, batchSize: 1_000, spool: .memory)
        let deliveredSQLite = try await deliveryRate(records: 200_000, batchSize: 1_000, spool: .sqlite)
        row("delivered, batches of 1000 (records/s)", deliveredMemory.rate, deliveredSQLite.rate)
        let singleMemory = try await deliveryRate(records: 5_000, batchSize: 1, spool: .memory)
        let singleSQLite = try await deliveryRate(records: 5_000, batchSize: 1, spool: .sqlite)
        row("delivered, one per request (records/s)", singleMemory.rate, singleSQLite.rate)
        print(String(format: "batching speed-up (sqlite)             %8.1fx", deliveredSQLite.rate / singleSQLite.rate))
    }

    /// How soon a crash record behind a backlog reaches a slow receiver.
    static func printCrashLatency() async throws {
        let latency = try await crashLatency(backlog: 5_000, receiverDelay: .milliseconds(100))
        print(String(
            format: "crash record behind %d info records, receiver answering after 100 ms (sqlite):",
            latency.backlog))
        print(String(format: "  accepted → arrived     %8.0f ms  (%.1f× one request's delay)",
                     latency.milliseconds, latency.milliseconds / 100))
        print(String(format: "  info records it overtook %6d of %d", latency.overtaken, latency.backlog))
    }

    /// What the daemon holds resident when it starts, with an empty spool and with a backlog.
    static func printRestartMemory() async throws {
        let memory = try await restartMemory(pending: 100_000)
        print("logshipd memory at start (its own process, sqlite spool), RSS / RssAnon / PSS:")
        print("  empty spool                \(memory.empty) MiB")
        print("  100 000 pending records    \(memory.loaded) MiB"
            + String(format: "  (spool file %.1f MiB; records are read only when claimed)", memory.spoolFile))
    }

    /// syslog-ng and rsyslog side by side, then the scenarios without a peer; both tables go to BENCHMARKS.md.
    static func compareAndReport() async throws {
        let comparison = try await PeerComparison.run()
        let targets = try await TargetScenarios.run(peerBatchedRate: comparison.peerBatchedRate)
        print("against the targets:")
        for row in comparison.targets + targets {
            print("  \(row.met ? "met    " : "missed ") \(row.scenario): \(row.measured) (target \(row.target))")
        }
        if !comparison.table.isEmpty {
            try PeerComparison.write(
                comparison.table, targets: comparison.targets + targets, loadAverage: comparison.loadAverage)
        }
    }

    static func row(_ label: String, _ memory: Double, _ sqlite: Double) {
        print(label.padding(toLength: 38, withPad: " ", startingAt: 0)
            + String(format: "%10.0f    %10.0f    %8.2f", memory, sqlite, sqlite / memory))
    }

    /// Lines written to the stream socket until all are committed to the spool; nothing is uploaded.
    static func socketIntakeRate(records: Int, spool: SpoolChoice) async throws -> Double {
        let daemon = try await start(spool: spool, reachable: false)
        let start = ContinuousClock.now
        let path = daemon.streamPath
        try await offloaded {
            let client = try UnixClient(path: path, type: .stream)
            var chunk: [UInt8] = []
            for index in 0..<records {
                chunk.append(contentsOf: "<14>Nov 21 10:00:00 bench[1]: intake line \(index)\n".utf8)
                if chunk.count > 60_000 || index == records - 1 {
                    try client.write(chunk)
                    chunk.removeAll(keepingCapacity: true)
                }
            }
        }
        try await eventually(within: .seconds(300)) {
            let statistics = await daemon.daemon.spool.statistics()
            return statistics.pendingTotal + statistics.claimed >= records
        }
        let elapsed = ContinuousClock.now - start
        try await daemon.stop()
        return Double(records) / elapsed.seconds
    }

    /// `logctl send`-style acknowledged requests of 1 000 records; nothing is uploaded.
    static func acknowledgedIntakeRate(records: Int, spool: SpoolChoice) async throws -> Double {
        let daemon = try await start(spool: spool, reachable: false)
        let start = ContinuousClock.now
        try await daemon.send(count: records, priority: "info", prefix: "record")
        let elapsed = ContinuousClock.now - start
        try await daemon.stop()
        return Double(records) / elapsed.seconds
    }

    struct DeliveryRate {
        var records: Int
        var requests: Int
        var rate: Double
    }

    /// Sends `records` through the control socket and times until the receiver has them all.
    static func deliveryRate(records: Int, batchSize: Int, spool: SpoolChoice) async throws -> DeliveryRate {
        let daemon = try await start(spool: spool) { $0.batch.maxRecords = batchSize }
        let start = ContinuousClock.now
        try await daemon.send(count: records, priority: "info", prefix: "record")
        try await daemon.receiver.waitFor(records: records, within: .seconds(300))
        let elapsed = ContinuousClock.now - start
        let requests = daemon.receiver.requests.count
        try await daemon.stop()
        return DeliveryRate(records: records, requests: requests, rate: Double(records) / elapsed.seconds)
    }

    struct CrashLatency {
        var backlog: Int
        var milliseconds: Double
        var overtaken: Int
    }

    static func crashLatency(backlog: Int, receiverDelay: Duration) async throws -> CrashLatency {
        let daemon = try await start(spool: .sqlite, receiverDelay: receiverDelay, decodingRecords: true) {
            $0.batch.maxRecords = 100
        }
        try await daemon.send(count: backlog, priority: "info", prefix: "record")
        guard try await daemon.send([Submission(message: "crash report", priority: "crash")]).ok else {
            throw WaitTimeout(description: "the crash record was refused")
        }
        let accepted = ContinuousClock.now
        try await daemon.receiver.waitFor(records: backlog + 1, within: .seconds(300))
        let requests = daemon.receiver.requests
        guard let carrier = requests.first(where: { $0.records.contains { $0.message == "crash report" } }) else {
            throw WaitTimeout(description: "the crash record did not arrive")
        }
        let overtaken = requests.filter { $0.sequence > carrier.sequence }.reduce(0) { $0 + $1.records.count }
        try await daemon.stop()
        return CrashLatency(
            backlog: backlog, milliseconds: (carrier.arrivedAt - accepted).seconds * 1000, overtaken: overtaken)
    }

    static func printJournalRates() async throws {
        let journal = try await journalRates(entries: 100_000)
        print("journal file of \(journal.entries) entries to the loopback receiver (sqlite spool):")
        print(String(
            format: "  logshipd                 %8.0f entries/s in %6d requests", journal.logshipd,
            journal.logshipdRequests))
        print(String(
            format: "  systemd-journal-upload   %8.0f entries/s in %6d requests", journal.upload,
            journal.uploadRequests))
        print(String(format: "  logshipd / journal-upload %7.2f", journal.logshipd / journal.upload))
        print("")
    }

    struct JournalRates {
        var entries: Int
        var logshipd: Double
        var logshipdRequests: Int
        var upload: Double
        var uploadRequests: Int
    }

    /// One journal file, shipped by logshipd (from its head, batches of 1 000) and by systemd-journal-upload
    /// (`--file`, no following) to the same kind of receiver: entries per second until the receiver has them all.
    static func journalRates(entries count: Int) async throws -> JournalRates {
        let journalPath = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(atPath: journalPath) }
        let files = JournalFiles(directory: journalPath)
        for start in stride(from: 0, to: count, by: 20_000) {
            try await files.append(
                JournalFiles.entries(min(20_000, count - start), from: 1_795_255_200_000_000 + UInt64(start)) {
                    "journal entry \(start + $0) " + String(repeating: "x", count: 80)
                })
        }

        let daemon = try await start(spool: .sqlite) {
            $0.journal.enabled = true
            $0.journal.directory = journalPath
            $0.journal.startAt = .head
        }
        let started = ContinuousClock.now
        try await daemon.receiver.waitFor(records: count, within: .seconds(600))
        let logshipdElapsed = ContinuousClock.now - started
        let logshipdRequests = daemon.receiver.requests.count
        try await daemon.stop()

        var counting = LogReceiver.Behavior()
        counting.decodesRecords = false
        let receiver = try await TestReceiver(behavior: counting)
        let uploadStarted = ContinuousClock.now
        let upload = try ChildProcess(
            "/lib/systemd/systemd-journal-upload",
            ["--file=\(journalPath)/system.journal", "--url=http://127.0.0.1:\(receiver.receiver.address.port ?? 0)",
             "--follow=no", "--save-state=\(journalPath)/upload-state"])
        let result = try await upload.wait(within: .seconds(600))
        guard result.status == 0 else { throw WaitTimeout(description: "journal-upload: \(result.standardError)") }
        try await receiver.waitFor(records: count, within: .seconds(600))
        let uploadElapsed = ContinuousClock.now - uploadStarted
        return JournalRates(
            entries: count, logshipd: Double(count) / logshipdElapsed.seconds, logshipdRequests: logshipdRequests,
            upload: Double(count) / uploadElapsed.seconds, uploadRequests: receiver.requests.count)
    }

    /// Memory of the logshipd binary once it has started, with an empty spool and with `pending` records.
    static func restartMemory(
        pending: Int
    ) async throws -> (empty: MemoryReading, loaded: MemoryReading, spoolFile: Double) {
        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spoolPath = "\(directory)/spool.db"
        let empty = try await residentMemory(directory: directory, spoolPath: spoolPath)

        let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
        let spool = try await SQLiteSpool.open(
            path: spoolPath, maximumBytes: 1 << 32, minimumFreeDiskBytes: 0, logger: logger)
        let order = PriorityClass.mostUrgentFirst
        for chunk in stride(from: 0, to: pending, by: 2000) {
            _ = try await spool.append((chunk..<min(pending, chunk + 2000)).map { index in
                let priority = order[index % order.count]
                return SpoolEntry(LogRecord(
                    timestamp: .now(), priority: priority, severity: priority.defaultSeverity, host: "bench",
                    source: .control, message: "pending record \(index) " + String(repeating: "x", count: 150)))
            })
        }
        await spool.close()
        let size = (try FileManager.default.attributesOfItem(atPath: spoolPath)[.size] as? Int) ?? 0
        let loaded = try await residentMemory(directory: directory, spoolPath: spoolPath)
        return (empty, loaded, Double(size) / 1_048_576)
    }

    /// Starts the logshipd binary on `spoolPath` with an unreachable remote, reads its memory once it has listened
    /// and settled, and stops it.
    static func residentMemory(directory: String, spoolPath: String) async throws -> MemoryReading {
        let control = "\(directory)/control.sock"
        try? FileManager.default.removeItem(atPath: control)
        let daemon = try ChildProcess(
            Binaries.logshipd, ["--config", "/dev/null"],
            environment: [
                "LOGSHIPD_INGEST_STREAM": "", "LOGSHIPD_INGEST_DATAGRAM": "", "LOGSHIPD_INGEST_CONTROL": control,
                "LOGSHIPD_SPOOL_PATH": spoolPath, "LOGSHIPD_SPOOL_MIN_FREE_DISK": "0",
                "LOGSHIPD_UPLOAD_URL": "http://127.0.0.1:9/unreachable", "LOGSHIPD_LOG_LEVEL": "error",
            ])
        try await waitUntil(within: .seconds(60)) { FileManager.default.fileExists(atPath: control) }
        // Let start-up settle (the first claims run) before reading: part of the measurement, not synchronisation.
        try await Task.sleep(for: .milliseconds(500))
        let resident = try MemoryReading(pid: daemon.pid)
        daemon.signal(SIGTERM)
        _ = try await daemon.wait(within: .seconds(60))
        return resident
    }

    /// Seconds of CPU this thread has used.
    static func threadCPUTime() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    /// An in-process daemon with its receiver; an unreachable remote keeps every record in the spool.
    static func start(
        spool: SpoolChoice, reachable: Bool = true, receiverDelay: Duration = .zero, decodingRecords: Bool = false,
        configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> TestDaemon {
        let directory = try TemporaryDirectory.make()
        // The receiver only counts, unless the figure needs the records: it must not be what is measured.
        var behavior = LogReceiver.Behavior(delay: receiverDelay)
        behavior.decodesRecords = decodingRecords
        let receiver = try await TestReceiver(behavior: behavior)
        return try await TestDaemon.start(receiver: receiver, directory: directory) {
            $0.ingest.datagram = ""
            // Port 9 (discard) has no listener on loopback: uploads fail and the records stay spooled.
            if !reachable { $0.upload.url = "http://127.0.0.1:9/unreachable" }
            $0.upload.retryInitial = .milliseconds(500)
            $0.upload.retryMax = .seconds(30)
            $0.spool.path = spool == .memory ? "memory" : "\(directory)/spool.db"
            $0.spool.maxBytes = 1 << 30
            $0.spool.minFreeDisk = 0
            configure(&$0)
        }
    }
}

enum SpoolChoice {
    case memory
    case sqlite
}
