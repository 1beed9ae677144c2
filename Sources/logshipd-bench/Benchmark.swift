import Foundation
import LogShip
import Logging
import NIOPosix
import Synchronization

/// `make bench`: runs logshipd in-process against a loopback receiver and prints throughput and latency.
///
/// Figures depend on the machine; the ratios between runs on one machine are what to compare.
@main
struct Benchmark {
    static func main() async throws {
        print("logshipd benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, "
            + "\(ProcessInfo.processInfo.physicalMemory >> 30) GiB; loopback receiver; figures vary with the machine,")
        print("compare the ratios within one run")
        print("")

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
        print("")

        let latency = try await crashLatency(backlog: 5_000, receiverDelay: .milliseconds(100))
        print(String(format: "crash record behind %d info records, receiver answering after 100 ms (sqlite):", latency.backlog))
        print(String(format: "  accepted → arrived     %8.0f ms  (%.1f× one request's delay)",
                     latency.milliseconds, latency.milliseconds / 100))
        print(String(format: "  info records it overtook %6d of %d", latency.overtaken, latency.backlog))
        print("")

        let memory = try await restartMemory(pending: 100_000)
        print("logshipd resident memory at start (its own process, sqlite spool):")
        print(String(format: "  empty spool                %6.1f MiB", memory.empty))
        print(String(format: "  100 000 pending records    %6.1f MiB  (spool file %.1f MiB; records are read only when claimed)",
                     memory.loaded, memory.spoolFile))
    }

    static func row(_ label: String, _ memory: Double, _ sqlite: Double) {
        print(label.padding(toLength: 38, withPad: " ", startingAt: 0)
            + String(format: "%10.0f    %10.0f    %8.2f", memory, sqlite, sqlite / memory))
    }

    /// Lines written to the stream socket until all are committed to the spool; nothing is uploaded.
    static func socketIntakeRate(records: Int, spool: SpoolChoice) async throws -> Double {
        let harness = try await Harness.start(receiverDelay: .zero, spool: spool, reachable: false) { _ in }
        let start = ContinuousClock.now
        try await harness.writeLines(count: records)
        try await harness.waitForSpooled(records)
        let elapsed = ContinuousClock.now - start
        try await harness.stop()
        return Double(records) / elapsed.seconds
    }

    /// `logctl send`-style acknowledged requests of 1 000 records; nothing is uploaded.
    static func acknowledgedIntakeRate(records: Int, spool: SpoolChoice) async throws -> Double {
        let harness = try await Harness.start(receiverDelay: .zero, spool: spool, reachable: false) { _ in }
        let start = ContinuousClock.now
        try await harness.send(count: records, priority: "info")
        let elapsed = ContinuousClock.now - start
        try await harness.stop()
        return Double(records) / elapsed.seconds
    }

    struct DeliveryRate {
        var records: Int
        var requests: Int
        var rate: Double
    }

    /// Sends `records` through the control socket and times until the receiver has them all.
    static func deliveryRate(records: Int, batchSize: Int, spool: SpoolChoice) async throws -> DeliveryRate {
        let harness = try await Harness.start(receiverDelay: .zero, spool: spool) { $0.batch.maxRecords = batchSize }
        let start = ContinuousClock.now
        try await harness.send(count: records, priority: "info")
        try await harness.waitForRecords(records)
        let elapsed = ContinuousClock.now - start
        let requests = harness.requestCount
        try await harness.stop()
        return DeliveryRate(records: records, requests: requests, rate: Double(records) / elapsed.seconds)
    }

    struct CrashLatency {
        var backlog: Int
        var milliseconds: Double
        var overtaken: Int
    }

    static func crashLatency(backlog: Int, receiverDelay: Duration) async throws -> CrashLatency {
        let harness = try await Harness.start(receiverDelay: receiverDelay, spool: .sqlite) { $0.batch.maxRecords = 100 }
        try await harness.send(count: backlog, priority: "info")
        let accepted = try await harness.sendOne("crash report", priority: "crash")
        let arrived = try await harness.waitForMessage("crash report")
        try await harness.waitForRecords(backlog + 1)
        let overtaken = harness.recordsAfter(message: "crash report")
        try await harness.stop()
        return CrashLatency(backlog: backlog, milliseconds: (arrived - accepted).seconds * 1000, overtaken: overtaken)
    }

    /// Resident memory of the logshipd binary once it has started, with an empty spool and with `pending` records.
    static func restartMemory(pending: Int) async throws -> (empty: Double, loaded: Double, spoolFile: Double) {
        let directory = NSTemporaryDirectory() + "logship-bench-rss-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spoolPath = "\(directory)/spool.db"
        let empty = try await DaemonProcess.residentMemory(directory: directory, spoolPath: spoolPath)

        let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
        let spool = try await SQLiteSpool.open(path: spoolPath, maximumBytes: 1 << 32, minimumFreeDiskBytes: 0, logger: logger)
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
        let loaded = try await DaemonProcess.residentMemory(directory: directory, spoolPath: spoolPath)
        return (empty, loaded, Double(size) / 1_048_576)
    }
}

enum SpoolChoice {
    case memory
    case sqlite
}

/// The logshipd binary, started to read its memory use.
enum DaemonProcess {
    /// Starts logshipd on `spoolPath` with an unreachable remote, reads VmRSS once it listens, and stops it.
    static func residentMemory(directory: String, spoolPath: String) async throws -> Double {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("logshipd").path
        let control = "\(directory)/control.sock"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--config", "/dev/null"]
        process.environment = [
            "LOGSHIPD_INGEST_STREAM": "", "LOGSHIPD_INGEST_DATAGRAM": "", "LOGSHIPD_INGEST_CONTROL": control,
            "LOGSHIPD_SPOOL_PATH": spoolPath, "LOGSHIPD_SPOOL_MIN_FREE_DISK": "0",
            "LOGSHIPD_UPLOAD_URL": "http://127.0.0.1:9/unreachable", "LOGSHIPD_LOG_LEVEL": "error",
        ]
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: control) {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("logshipd did not start") }
            try await Task.sleep(for: .milliseconds(10))
        }
        // Let start-up settle (the first claims run) before reading.
        try await Task.sleep(for: .milliseconds(500))
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ")[1])
        else { throw BenchmarkError("no VmRSS for logshipd") }
        return kilobytes / 1024
    }
}

/// A daemon and a receiver in one process, with the receiver's arrivals timed.
final class Harness: Sendable {
    private let daemon: Daemon
    private let receiver: LogReceiver
    private let log: ArrivalLog
    private let tasks: [Task<Void, any Error>]
    private let directory: String

    private init(daemon: Daemon, receiver: LogReceiver, log: ArrivalLog, directory: String) {
        self.daemon = daemon
        self.receiver = receiver
        self.log = log
        self.directory = directory
        tasks = [Task { try await receiver.run() }, Task { try await daemon.run() }]
    }

    static func start(
        receiverDelay: Duration, spool: SpoolChoice = .memory, reachable: Bool = true,
        configure: (inout DaemonConfiguration) -> Void
    ) async throws -> Harness {
        let log = ArrivalLog()
        let receiver = try await LogReceiver(host: "127.0.0.1", port: 0, behavior: .init(delay: receiverDelay)) {
            log.record($0)
        }
        let directory = NSTemporaryDirectory() + "logship-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = DaemonConfiguration()
        configuration.ingest.stream = "\(directory)/ingest.sock"
        configuration.ingest.datagram = ""
        configuration.ingest.control = "\(directory)/control.sock"
        // Port 9 (discard) has no listener on loopback: uploads fail and the records stay spooled.
        configuration.upload.url = reachable ? receiver.url : "http://127.0.0.1:9/unreachable"
        configuration.spool.path = spool == .memory ? "memory" : "\(directory)/spool.db"
        configuration.spool.minFreeDisk = 0
        configure(&configuration)
        let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
        let daemon = try await Daemon.start(configuration: configuration, logger: logger, shutdownSignals: [])
        return Harness(daemon: daemon, receiver: receiver, log: log, directory: directory)
    }

    var controlPath: String { daemon.configuration.ingest.control }

    var requestCount: Int { log.arrivals.withLock { $0.requests.count } }

    /// Sends `count` records in acknowledged chunks of 1 000.
    func send(count: Int, priority: String) async throws {
        let path = controlPath
        try await NIOThreadPool.singleton.runIfActive {
            let client = try ControlClient(path: path)
            var sent = 0
            while sent < count {
                let chunk = (sent..<min(count, sent + 1000)).map { Submission(message: "record \($0)", priority: priority) }
                let response = try client.send(ControlRequest(command: .send, records: chunk))
                guard response.ok else { throw BenchmarkError(response.error ?? "send refused") }
                sent += chunk.count
            }
        }
    }

    /// Writes `count` syslog lines to the ingest stream socket over one connection.
    func writeLines(count: Int) async throws {
        let path = daemon.configuration.ingest.stream
        try await NIOThreadPool.singleton.runIfActive {
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(descriptor) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard connected == 0 else { throw BenchmarkError("cannot connect to \(path)") }
            var chunk: [UInt8] = []
            for index in 0..<count {
                chunk.append(contentsOf: "<14>Nov 21 10:00:00 bench[1]: intake line \(index)\n".utf8)
                if chunk.count > 60_000 || index == count - 1 {
                    var offset = 0
                    while offset < chunk.count {
                        let written = chunk[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                        guard written > 0 else { throw BenchmarkError("write failed") }
                        offset += written
                    }
                    chunk.removeAll(keepingCapacity: true)
                }
            }
        }
    }

    /// Waits until `count` records are committed in the spool (pending or claimed).
    func waitForSpooled(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(300)
        while true {
            let statistics = await daemon.spool.statistics()
            if statistics.pendingTotal + statistics.claimed >= count { return }
            guard ContinuousClock.now < deadline else { throw BenchmarkError("records not spooled in time") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Sends one record and returns when it was accepted.
    func sendOne(_ message: String, priority: String) async throws -> ContinuousClock.Instant {
        let path = controlPath
        return try await NIOThreadPool.singleton.runIfActive {
            let response = try ControlClient(path: path).send(
                ControlRequest(command: .send, records: [Submission(message: message, priority: priority)]))
            guard response.ok else { throw BenchmarkError(response.error ?? "send refused") }
            return ContinuousClock.now
        }
    }

    func waitForRecords(_ count: Int) async throws {
        try await poll { $0.recordCount >= count }
    }

    func waitForMessage(_ message: String) async throws -> ContinuousClock.Instant {
        try await poll { $0.firstSeen[message] != nil }
        return log.arrivals.withLock { $0.firstSeen[message]! }
    }

    /// Records in requests that arrived after the one carrying `message`.
    func recordsAfter(message: String) -> Int {
        log.arrivals.withLock { arrivals in
            guard let carrier = arrivals.requests.first(where: { $0.records.contains { $0.message == message } }) else {
                return 0
            }
            return arrivals.requests.filter { $0.sequence > carrier.sequence }.reduce(0) { $0 + $1.records.count }
        }
    }

    func stop() async throws {
        await daemon.shutdown()
        try await tasks[1].value
        tasks[0].cancel()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Checks `condition` every millisecond for up to five minutes.
    private func poll(_ condition: (ArrivalLog.Arrivals) -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(300)
        while !log.arrivals.withLock({ condition($0) }) {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("timed out waiting for the receiver") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}

/// What the receiver saw, with the first arrival time of watched messages.
final class ArrivalLog: Sendable {
    struct Arrivals {
        var requests: [LogReceiver.Request] = []
        var recordCount = 0
        var firstSeen: [String: ContinuousClock.Instant] = [:]
    }

    /// Messages whose arrival time is recorded.
    private static let watched: Set<String> = ["crash report"]

    let arrivals = Mutex(Arrivals())

    func record(_ request: LogReceiver.Request) {
        let now = ContinuousClock.now
        arrivals.withLock { arrivals in
            arrivals.requests.append(request)
            arrivals.recordCount += request.records.count
            for record in request.records where Self.watched.contains(record.message) {
                arrivals.firstSeen[record.message] = arrivals.firstSeen[record.message] ?? now
            }
        }
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
