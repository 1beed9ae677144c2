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
            + "\(ProcessInfo.processInfo.physicalMemory >> 30) GiB; loopback receiver, in-memory spool")
        print("")

        let single = try await deliveryRate(records: 5_000, batchSize: 1)
        print(String(format: "one record per request   %8.0f records/s  (%d records, %d requests)",
                     single.rate, single.records, single.requests))
        let batched = try await deliveryRate(records: 200_000, batchSize: 1_000)
        print(String(format: "batched (max 1000)       %8.0f records/s  (%d records, %d requests)",
                     batched.rate, batched.records, batched.requests))
        print(String(format: "batching speed-up        %8.1fx", batched.rate / single.rate))
        print("")

        let latency = try await crashLatency(backlog: 5_000, receiverDelay: .milliseconds(100))
        print(String(format: "crash record behind %d info records, receiver answering after 100 ms:", latency.backlog))
        print(String(format: "  accepted → arrived     %8.0f ms  (%.1f× one request's delay)",
                     latency.milliseconds, latency.milliseconds / 100))
        print(String(format: "  info records it overtook %6d of %d", latency.overtaken, latency.backlog))
    }

    struct DeliveryRate {
        var records: Int
        var requests: Int
        var rate: Double
    }

    /// Sends `records` through the control socket and times until the receiver has them all.
    static func deliveryRate(records: Int, batchSize: Int) async throws -> DeliveryRate {
        let harness = try await Harness.start(receiverDelay: .zero) { $0.batch.maxRecords = batchSize }
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
        let harness = try await Harness.start(receiverDelay: receiverDelay) { $0.batch.maxRecords = 100 }
        try await harness.send(count: backlog, priority: "info")
        let accepted = try await harness.sendOne("crash report", priority: "crash")
        let arrived = try await harness.waitForMessage("crash report")
        try await harness.waitForRecords(backlog + 1)
        let overtaken = harness.recordsAfter(message: "crash report")
        try await harness.stop()
        return CrashLatency(backlog: backlog, milliseconds: (arrived - accepted).seconds * 1000, overtaken: overtaken)
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
        receiverDelay: Duration, configure: (inout DaemonConfiguration) -> Void
    ) async throws -> Harness {
        let log = ArrivalLog()
        let receiver = try await LogReceiver(host: "127.0.0.1", port: 0, behavior: .init(delay: receiverDelay)) {
            log.record($0)
        }
        let directory = NSTemporaryDirectory() + "logship-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = DaemonConfiguration()
        configuration.ingest.stream = ""
        configuration.ingest.datagram = ""
        configuration.ingest.control = "\(directory)/control.sock"
        configuration.upload.url = receiver.url
        configuration.spool.path = "memory"
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
