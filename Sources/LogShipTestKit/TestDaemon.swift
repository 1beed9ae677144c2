import Foundation
import LogShip
import Logging
import NIOPosix

/// logshipd running in-process against a `TestReceiver`, with its sockets in a private temporary directory.
public final class TestDaemon: Sendable {
    public let directory: String
    public let receiver: TestReceiver
    public let daemon: Daemon
    public let configuration: DaemonConfiguration
    private let task: Task<Void, any Error>
    /// The thread the daemon's services run on: its own, not the process's cooperative pool, which tests that
    /// compute for seconds can hold (both threads, on two cores) long enough that a daemon started beside them
    /// would not accept a connection, and so not greet, within a minute.
    private let servicesLoop: MultiThreadedEventLoopGroup

    public var streamPath: String { configuration.ingest.stream }
    public var datagramPath: String { configuration.ingest.datagram }
    public var controlPath: String { configuration.ingest.control }
    public var shipper: Shipper { daemon.shipper }

    private init(
        directory: String, receiver: TestReceiver, daemon: Daemon, configuration: DaemonConfiguration,
        servicesLoop: MultiThreadedEventLoopGroup
    ) {
        self.directory = directory
        self.receiver = receiver
        self.daemon = daemon
        self.configuration = configuration
        self.servicesLoop = servicesLoop
        task = Task(executorPreference: EventLoopTaskExecutor(servicesLoop.next())) { try await daemon.run() }
    }

    /// Starts a daemon posting to a new receiver with `behavior`.
    ///
    /// - Parameter configure: Adjusts the configuration after the test defaults are set.
    public static func start(
        receiver behavior: LogReceiver.Behavior = .init(),
        configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> TestDaemon {
        try await start(receiver: try await TestReceiver(behavior: behavior), configure: configure)
    }

    /// Starts a daemon posting to `receiver`; `configure` may point it elsewhere.
    public static func start(
        receiver: TestReceiver,
        directory: String? = nil,
        configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> TestDaemon {
        let directory = try directory ?? TemporaryDirectory.make()
        var configuration = Self.configuration(directory: directory, url: receiver.url)
        configure(&configuration)
        let daemon = try await Daemon.start(
            configuration: configuration, logger: .test, shutdownSignals: [])
        let servicesLoop = await startedEventLoopGroup()
        let started = TestDaemon(
            directory: directory, receiver: receiver, daemon: daemon, configuration: configuration,
            servicesLoop: servicesLoop)
        // Ready once the control socket answers: its services run, and a client (a logctl the test starts) is
        // greeted at once instead of waiting for a daemon still starting on a loaded machine.
        _ = try await started.status()
        return started
    }

    /// The tests' configuration: sockets in `directory`, posting to `url`, an in-memory spool, short retries.
    public static func configuration(directory: String, url: String) -> DaemonConfiguration {
        var configuration = DaemonConfiguration()
        configuration.ingest.stream = "\(directory)/ingest.sock"
        configuration.ingest.datagram = "\(directory)/ingest.dgram"
        configuration.ingest.control = "\(directory)/control.sock"
        configuration.upload.url = url
        configuration.upload.retryInitial = .milliseconds(50)
        configuration.upload.retryMax = .milliseconds(500)
        // A loaded machine can answer late: a test that counts deliveries exactly must not see a retry for that.
        // Tests about timeouts set their own.
        configuration.upload.timeout = .seconds(60)
        configuration.spool.path = "memory"
        configuration.spool.maxBytes = 256 << 20
        return configuration
    }

    /// Writes lines to the ingest stream socket over one connection, then closes it.
    public func ingest(_ lines: [String]) async throws {
        try await ingest(bytes: Array(lines.map { $0 + "\n" }.joined().utf8))
    }

    public func ingest(bytes: [UInt8]) async throws {
        let path = streamPath
        try await offloaded {
            let client = try UnixClient(path: path, type: .stream)
            try client.write(bytes)
        }
    }

    /// Sends records over the control socket, as `logctl send` does, and returns the daemon's answer.
    ///
    /// Its clients wait up to a minute for the greeting, like every wait of the tests: a test process runs many
    /// daemons at once on a shared machine.
    public func send(_ submissions: [Submission]) async throws -> ControlResponse {
        let request = ControlRequest(command: .send, records: submissions)
        return try await ControlConnection.connect(path: controlPath).send(request)
    }

    /// Sends `count` records of one priority, in chunks, each acknowledged.
    public func send(count: Int, priority: String, prefix: String, fields: [String: String]? = nil) async throws {
        var sent = 0
        while sent < count {
            let chunk = (sent..<min(count, sent + 1000)).map {
                Submission(message: "\(prefix) \($0)", priority: priority, fields: fields)
            }
            let response = try await send(chunk)
            guard response.ok else { throw WaitTimeout(description: "send refused: \(response.error ?? "?")") }
            sent += chunk.count
        }
    }

    /// Shuts the daemon down gracefully and waits for it to stop.
    ///
    /// - Parameter keepDirectory: Leave the sockets' directory (and a spool in it) for a restart.
    public func stop(keepDirectory: Bool = false) async throws {
        await daemon.shutdown()
        try await task.value
        try? await servicesLoop.shutdownGracefully()
        if !keepDirectory {
            // Off the cooperative pool: the directory may hold a spool file of many megabytes.
            let directory = directory
            await offloaded { _ = try? FileManager.default.removeItem(atPath: directory) }
        }
    }

    /// Asks the daemon for its counters over the control socket.
    public func status() async throws -> DaemonStatus {
        let response = try await ControlConnection.connect(path: controlPath).send(ControlRequest(command: .status))
        guard let status = response.status else { throw WaitTimeout(description: "no status") }
        return status
    }
}

extension Logger {
    /// Quiet unless LOGSHIP_TEST_LOG is set, when it logs at debug level to stderr.
    public static var test: Logger {
        guard ProcessInfo.processInfo.environment["LOGSHIP_TEST_LOG"] != nil else {
            return Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        }
        var logger = Logger(label: "test", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .debug
        return logger
    }
}

/// Runs blocking work (socket calls, process waits) on a thread of its own instead of the cooperative pool.
///
/// Not on a shared pool: NIO's singleton pool has a thread per core (two here), and tests block in it for long
/// (a flush waiting up to a minute, writes waiting for spool room, `waitpid` on a draining daemon), which held
/// other tests' work up: in full runs, the socket-activation restart test's writers did not write 1 000 lines
/// within a minute, and passed when run alone.
public func offloaded<Value: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> Value
) async throws(Failure) -> Value {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, Failure>, Never>) in
        Thread.detachNewThread { continuation.resume(returning: Result { () throws(Failure) -> Value in try body() }) }
    }
    return try result.get()
}

/// A new event loop group of `threads`, made off the cooperative pool: its init waits until its threads have
/// started, which on a loaded machine takes a while.
public func startedEventLoopGroup(threads: Int = 1) async -> MultiThreadedEventLoopGroup {
    await offloaded { MultiThreadedEventLoopGroup(numberOfThreads: threads) }
}

/// Runs `body`, a test's computation of seconds, on an event loop of its own instead of the cooperative pool, and in
/// the calling task: unlike ``offloaded(_:)``'s, its expectations (`#expect`, `#require`) are the test's.
///
/// A test computing on the pool holds one of its two threads, and every sleeping task of the test process waits
/// for the other; in loaded full runs, this debug build's encoding and decoding tests held one for minutes.
public func computedOffThePool<Value, Failure: Error>(
    _ body: () throws(Failure) -> Value
) async throws(Failure) -> Value {
    let group = await startedEventLoopGroup()
    // The task prefers the loop: the body, called from an async closure, runs on the loop's thread.
    let result = await withTaskExecutorPreference(EventLoopTaskExecutor(group.next())) {
        Result { () throws(Failure) -> Value in try body() }
    }
    try? await group.shutdownGracefully()
    return try result.get()
}

/// Directories for tests and benchmarks, all under one root per process that is removed when the process exits,
/// so that runs leave nothing behind: spools, journals and staged installs add up to gigabytes over a few runs.
public enum TemporaryDirectory {
    /// A new directory with a short path, since Unix socket paths are limited to 107 bytes.
    public static func make() throws -> String {
        try makeDirectory(template: "\(try root.get())/XXXXXX")
    }

    /// Made on first use; `atexit` removes it with everything in it.
    private static let root: Result<String, WaitTimeout> = Result { () throws(WaitTimeout) -> String in
        let path = try makeDirectory(template: "/tmp/logship-XXXXXX")
        // Passable, not listable: a test that runs a client as another user opens its own directory to it.
        chmod(path, 0o711)
        atexit {
            guard case .success(let path) = TemporaryDirectory.root else { return }
            try? FileManager.default.removeItem(atPath: path)
        }
        return path
    }

    private static func makeDirectory(template: String) throws(WaitTimeout) -> String {
        var characters = Array(template.utf8CString)
        guard let pointer = mkdtemp(&characters) else {
            throw WaitTimeout(description: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        return String(cString: pointer)
    }
}
