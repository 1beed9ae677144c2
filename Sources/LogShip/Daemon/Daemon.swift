import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

/// logshipd assembled: sockets bound, spool, shipper and HTTP client, ready to run as one service group.
///
/// ``start(configuration:logger:)`` binds every socket before anything runs, so a socket held by another daemon
/// stops start-up with a clear error. ``run(signals:)`` serves until SIGTERM/SIGINT (or ``shutdown()``); the
/// inputs stop first, then the shipper lets requests in flight finish within `upload.shutdown_timeout`.
public final class Daemon: Sendable {
    public let configuration: DaemonConfiguration
    public let shipper: Shipper
    public let intake: RecordIntake
    public let spool: any Spool

    private let httpClient: HTTPClient
    private let serviceGroup: ServiceGroup
    private let logger: Logger

    private init(
        configuration: DaemonConfiguration, shipper: Shipper, intake: RecordIntake, spool: any Spool,
        httpClient: HTTPClient, serviceGroup: ServiceGroup, logger: Logger
    ) {
        self.configuration = configuration
        self.shipper = shipper
        self.intake = intake
        self.spool = spool
        self.httpClient = httpClient
        self.serviceGroup = serviceGroup
        self.logger = logger
    }

    /// Builds the daemon and binds its sockets.
    ///
    /// - Parameters:
    ///   - shutdownSignals: Signals that begin a graceful shutdown; none for an in-process daemon in tests.
    /// - Throws: ``IngestError`` when a socket cannot be bound.
    public static func start(
        configuration: DaemonConfiguration,
        logger: Logger,
        shutdownSignals: [UnixSignal] = [.sigterm, .sigint]
    ) async throws -> Daemon {
        let group = MultiThreadedEventLoopGroup.singleton
        let hostname = configuration.hostname.isEmpty ? Hostname.current : configuration.hostname
        let parser = RecordParser(hostname: hostname)

        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.httpVersion = .http1Only
        clientConfiguration.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: configuration.upload.maxInFlight)
        // A refused connection must fail the request at once: the shipper's shared backoff decides when to try
        // again, and a pause, unlike the client's own silent reconnecting, keeps crash records first in line.
        clientConfiguration.connectionPool.retryConnectionEstablishment = false
        clientConfiguration.timeout = .init(connect: TimeAmount(configuration.upload.timeout))
        let httpClient = HTTPClient(eventLoopGroup: group, configuration: clientConfiguration)

        let spool: any Spool
        if configuration.spool.path == "memory" {
            spool = MemorySpool(maximumBytes: configuration.spool.maxBytes)
        } else {
            do {
                spool = try await SQLiteSpool.open(
                    path: configuration.spool.path, maximumBytes: configuration.spool.maxBytes,
                    minimumFreeDiskBytes: configuration.spool.minFreeDisk, logger: logger)
            } catch {
                try? await httpClient.shutdown()
                throw error
            }
        }
        let delivery = BatchDelivery(
            spool: spool,
            uploader: HTTPUploader(
                client: httpClient,
                configuration: .init(
                    url: configuration.upload.url,
                    headers: configuration.upload.headers,
                    timeout: configuration.upload.timeout)),
            limits: BatchLimits(maxRecords: configuration.batch.maxRecords, maxBytes: configuration.batch.maxBytes),
            backoff: RetryBackoff(initial: configuration.upload.retryInitial, maximum: configuration.upload.retryMax),
            logger: logger)
        let shipper = Shipper(
            delivery: delivery,
            maxInFlight: configuration.upload.maxInFlight,
            shutdownTimeout: configuration.upload.shutdownTimeout,
            logger: logger)
        let intake = RecordIntake(spool: spool, logger: logger)

        // Inputs come after the shipper: a service group stops its services in reverse order, so intake stops
        // before the shipper drains.
        var services: [any Service] = [shipper]
        do {
            let ingest = configuration.ingest
            if !ingest.stream.isEmpty {
                services.append(
                    try await StreamIngestServer.bind(
                        path: ingest.stream, mode: ingest.socketMode, maximumRecordBytes: ingest.maxRecordBytes,
                        parser: parser, intake: intake, group: group, logger: logger))
            }
            if !ingest.datagram.isEmpty {
                services.append(
                    try DatagramIngestServer.bind(
                        path: ingest.datagram, mode: ingest.socketMode, maximumRecordBytes: ingest.maxRecordBytes,
                        parser: parser, intake: intake, logger: logger))
            }
            services.append(
                try await ControlServer.bind(
                    path: ingest.control, mode: ingest.socketMode, maximumRecordBytes: ingest.maxRecordBytes,
                    hostname: hostname, intake: intake, shipper: shipper, spool: spool, group: group, logger: logger))
        } catch {
            await spool.close()
            try? await httpClient.shutdown()
            throw error
        }

        var groupConfiguration = ServiceGroupConfiguration(
            services: services.map {
                .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: shutdownSignals,
            logger: logger)
        // A backstop: the shipper bounds its own drain, this bounds everything else.
        groupConfiguration.maximumGracefulShutdownDuration = configuration.upload.shutdownTimeout + .seconds(10)

        return Daemon(
            configuration: configuration, shipper: shipper, intake: intake, spool: spool,
            httpClient: httpClient, serviceGroup: ServiceGroup(configuration: groupConfiguration), logger: logger)
    }

    /// Runs until shutdown; returns once every service has stopped and the HTTP client is closed.
    ///
    /// - Throws: The first error a service failed with.
    public func run() async throws {
        logger.info(
            "logshipd running",
            metadata: [
                "logship.upload.url": "\(configuration.upload.url)",
                "logship.upload.max_in_flight": "\(configuration.upload.maxInFlight)",
            ])
        var failure: (any Error)?
        do {
            try await serviceGroup.run()
        } catch {
            failure = error
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
        try? await httpClient.shutdown()
        logger.info("logshipd stopped")
        if let failure { throw failure }
    }

    /// Begins a graceful shutdown, as SIGTERM does.
    public func shutdown() async {
        await serviceGroup.triggerGracefulShutdown()
    }
}
