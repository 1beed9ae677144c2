import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UnixSignals

/// logshipd assembled: sockets bound, spool, shipper and HTTP client, ready to run as one service group.
///
/// ``start(configuration:logger:shutdownSignals:serviceManager:uploader:reloading:)`` opens the spool and binds
/// every socket before anything runs, so a spool or socket held by another daemon stops start-up with a clear
/// error. ``run()`` serves until SIGTERM/SIGINT (or ``shutdown()``), also one that came while it started; the
/// inputs stop first, then the shipper lets requests in flight finish within `upload.shutdown_timeout`, and what
/// is not delivered stays in the spool.
public final class Daemon: Sendable {
    /// The configuration running now (a reload changes it).
    public var configuration: DaemonConfiguration { live.configuration }
    public let shipper: Shipper
    public let intake: RecordIntake
    public let spool: any Spool & DeadLetterStore

    /// Where the metrics are served, when `metrics.listen` is set.
    public let metricsAddress: SocketAddress?
    private let live: LiveConfiguration
    /// One per endpoint; none when a test's uploader stands in.
    private let httpUploaders: [HTTPUploader]
    private let serviceGroup: ServiceGroup
    /// The shutdown signals, trapped since `start` began; ``run()`` hands each to the service group.
    private let shutdownRequests: UnixSignalsSequence
    private let hasRun = Atomic(false)
    private let notifier: (any ServiceManagerNotifier)?
    private let logger: Logger

    private init(
        live: LiveConfiguration, metricsAddress: SocketAddress?, shipper: Shipper, intake: RecordIntake,
        spool: any Spool & DeadLetterStore,
        httpUploaders: [HTTPUploader], serviceGroup: ServiceGroup, shutdownRequests: UnixSignalsSequence,
        notifier: (any ServiceManagerNotifier)?, logger: Logger
    ) {
        self.live = live
        self.metricsAddress = metricsAddress
        self.shipper = shipper
        self.intake = intake
        self.spool = spool
        self.httpUploaders = httpUploaders
        self.serviceGroup = serviceGroup
        self.shutdownRequests = shutdownRequests
        self.notifier = notifier
        self.logger = logger
    }

    /// The threads every daemon in this process uploads on: loops of their own, not
    /// `MultiThreadedEventLoopGroup.singleton`'s, where the ingest sockets decode frames. A busy input then never
    /// holds up reading a response or writing the next request (BENCHMARKS.md, Measured choices). A daemon uses one
    /// loop per request it may have in flight, up to one per core (``UploadLoops``). Like the singleton, the group
    /// lives as long as the process and is never shut down.
    private static let uploadGroup = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)

    /// Opens the spool, builds the shipper and binds the sockets.
    ///
    /// - Parameters:
    ///   - shutdownSignals: Signals that begin a graceful shutdown; none for an in-process daemon in tests.
    ///   - serviceManager: Where to send `READY=1`, `STATUS=`, `WATCHDOG=1` and `STOPPING=1` (systemd when
    ///     `NOTIFY_SOCKET` is set), and the watchdog interval it expects; `nil` reports to nobody.
    ///   - uploader: What carries batches to the remote instead of HTTP: a test's, to stand in for every endpoint.
    ///   - reloading: How to read the configuration again on SIGHUP, and the log level a reload sets; `nil`
    ///     leaves SIGHUP alone.
    /// - Throws: ``SpoolError`` when the spool cannot be opened, ``IngestError`` when a socket cannot be bound.
    /// - Important: `shutdownSignals`, and SIGHUP with `reloading`, are trapped from before the first socket is
    ///   bound: from then on they no longer take their default action, and one that comes before ``run()`` waits
    ///   for it. Dispatch, which traps them, keeps its handler for the life of the process, so a process whose
    ///   `start` threw no longer dies of them either; logshipd exits at once then.
    public static func start(
        configuration: DaemonConfiguration,
        logger: Logger,
        shutdownSignals: [UnixSignal] = [.sigterm, .sigint],
        serviceManager: (notifier: any ServiceManagerNotifier, watchdogInterval: Duration?)? = nil,
        uploader: (any Uploader)? = nil,
        reloading: (load: @Sendable () async throws -> DaemonConfiguration, logLevel: LogLevelControl?)? = nil
    ) async throws -> Daemon {
        for notice in configuration.notices { logger.warning("configuration: \(notice)") }
        let uploadConfigurations = try LiveConfiguration.uploadConfigurations(configuration)
        // Trapped before anything is bound or opened. Untrapped, a SIGTERM in the moments before the service
        // group runs (its sockets already there, `systemctl stop` right after a start) or a SIGHUP just after
        // READY=1 ends the process with the signal's default action: no graceful stop, exit by signal.
        let shutdownRequests = await UnixSignalsSequence(trapping: shutdownSignals)
        let hangups = reloading == nil ? nil : await UnixSignalsSequence(trapping: .sighup)
        // The loops of the upload connections and of the delivery tasks that use them (EventLoopTaskExecutor).
        let uploadLoops = UploadLoops(Array(uploadGroup.makeIterator().prefix(configuration.upload.maxInFlight)))
        let httpUploaders = uploader == nil
            ? try uploadConfigurations.map { try HTTPUploader(configuration: $0, eventLoops: uploadLoops.eventLoops) }
            : []
        let spool = try await openSpool(configuration.spool, logger: logger)
        if configuration.upload.endpoints.contains(where: { configuration.tls(of: $0).insecureSkipVerify }) {
            logger.warning(
                "tls.insecure_skip_verify is on: any server certificate is accepted, uploads can be intercepted")
        }
        let metrics = configuration.metrics.listen.isEmpty ? nil : MetricsExporter()
        let delivery = BatchDelivery(
            spool: spool,
            uploaders: uploader.map { Array(repeating: $0, count: configuration.upload.endpoints.count) }
                ?? httpUploaders,
            loops: uploadLoops,
            observeRequest: metrics.map { metrics in { @Sendable duration in metrics.recordRequest(duration) } },
            logger: logger)
        let shipper = Shipper(
            spool: spool,
            delivery: delivery,
            settings: LiveConfiguration.shipperSettings(configuration),
            shutdownTimeout: configuration.upload.shutdownTimeout,
            // Every request is bounded by upload.timeout; settling adds a disk write or two.
            stuckAfter: configuration.upload.timeout * 3 + .seconds(5),
            logger: logger)
        let intake = RecordIntake(spool: spool, crashBudget: CrashBudget.Settings(configuration.intake))

        let inputs: [any Service]
        let journal: JournalIngestServer?
        let statusSource: DaemonStatusSource
        do {
            (inputs, journal, statusSource) = try await bindInputs(
                configuration, intake: intake, shipper: shipper, spool: spool, logger: logger)
        } catch {
            await spool.close()
            for uploader in httpUploaders { uploader.shutdown() }
            throw error
        }

        var metricsServer: MetricsServer?
        if let metrics, let address = ListenAddress(configuration.metrics.listen) {
            if !(address.host.hasPrefix("127.") || address.host == "::1") {
                logger.warning(
                    "metrics.listen is not a loopback address: anyone who can reach it can read logshipd's counters",
                    metadata: ["logship.metrics.listen": "\(configuration.metrics.listen)"])
            }
            do {
                metricsServer = try await MetricsServer(
                    host: address.host, port: address.port, maximumConnections: configuration.metrics.maxConnections,
                    idleTimeout: configuration.metrics.idleTimeout, exporter: metrics, status: statusSource,
                    logger: logger)
            } catch {
                await spool.close()
                for uploader in httpUploaders { uploader.shutdown() }
                throw IngestError.socketCall("bind", path: configuration.metrics.listen, "\(error)")
            }
        }
        let live = LiveConfiguration(
            configuration, uploaders: httpUploaders, shipper: shipper, intake: intake, journal: journal,
            logLevel: reloading?.logLevel)
        var reporters: [any Service] = []
        if let reloading, let hangups {
            reporters.append(
                ReloadService(
                    hangups: hangups, load: reloading.load, live: live, notifier: serviceManager?.notifier,
                    logger: logger))
        }
        if let serviceManager {
            reporters.append(
                ServiceManagerReporter(
                    notifier: serviceManager.notifier, watchdogInterval: serviceManager.watchdogInterval,
                    status: { await statusLine(shipper: shipper, spool: spool) },
                    isShippingHealthy: { shipper.isMoving }, logger: logger))
        }

        // A service group stops its services in reverse order: the reporter says STOPPING=1 first, the inputs
        // stop before the shipper drains.
        var groupConfiguration = ServiceGroupConfiguration(
            services: ([shipper] + inputs + (metricsServer.map { [$0] } ?? []) + reporters).map {
                .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            logger: logger)
        // A backstop: the shipper bounds its own drain, this bounds everything else.
        groupConfiguration.maximumGracefulShutdownDuration = configuration.upload.shutdownTimeout + .seconds(10)

        return Daemon(
            live: live, metricsAddress: metricsServer?.address, shipper: shipper, intake: intake, spool: spool,
            httpUploaders: httpUploaders, serviceGroup: ServiceGroup(configuration: groupConfiguration),
            shutdownRequests: shutdownRequests, notifier: serviceManager?.notifier, logger: logger)
    }

    private static func openSpool(_ configuration: DaemonConfiguration.Spool, logger: Logger) async throws
        -> any Spool & DeadLetterStore
    {
        if configuration.path == "memory" {
            return MemorySpool(maximumBytes: configuration.maxBytes, logger: logger)
        }
        return try await SQLiteSpool.open(
            path: configuration.path, maximumBytes: configuration.maxBytes,
            minimumFreeDiskBytes: configuration.minFreeDisk, cacheBytes: configuration.maxCacheBytes, logger: logger)
    }

    /// Runs until shutdown; returns once every service has stopped and the HTTP client is closed.
    ///
    /// - Throws: The first error a service failed with.
    /// - Important: A daemon runs once.
    public func run() async throws {
        precondition(!hasRun.exchange(true, ordering: .relaxed), "Daemon.run() is called once")
        // The sockets are bound and listening and the spool is open: producers can write from now on.
        notifier?.notify("READY=1\nSTATUS=\(await Self.statusLine(shipper: shipper, spool: spool))")
        logger.info(
            "logshipd running",
            metadata: [
                "logship.upload.url": "\(configuration.upload.endpoints.map(\.shownName).joined(separator: " "))",
                "logship.upload.max_in_flight": "\(configuration.upload.maxInFlight)",
            ])
        let outcome = await withDiscardingTaskGroup { tasks in
            // A signal that came while the daemon started is handed over at once. Told before it runs, the group
            // remembers it and stops its services as soon as it has started them.
            tasks.addTask { [serviceGroup, shutdownRequests, logger] in
                var stopping = false
                for await signal in shutdownRequests {
                    logger.log(
                        level: stopping ? .debug : .info, stopping ? "already stopping" : "stopping on a signal",
                        metadata: ["logship.signal": "\(signal)"])
                    stopping = true
                    await serviceGroup.triggerGracefulShutdown()
                }
            }
            let outcome = await Result(catching: { try await serviceGroup.run() })
            tasks.cancelAll()
            return outcome
        }
        let statistics = await spool.statistics()
        if statistics.pendingTotal + statistics.claimed > 0 {
            let kept = configuration.spool.path == "memory"
                ? "lost: the in-memory spool does not keep them" : "kept in the spool for the next start"
            logger.notice(
                "stopping with records not yet delivered; \(kept)",
                metadata: ["logship.spool.pending": "\(statistics.pendingTotal + statistics.claimed)"])
        }
        await spool.close()
        for uploader in httpUploaders { uploader.shutdown() }
        logger.info("logshipd stopped")
        try outcome.get()
    }

    /// Begins a graceful shutdown, as SIGTERM does.
    public func shutdown() async {
        await serviceGroup.triggerGracefulShutdown()
    }
}
