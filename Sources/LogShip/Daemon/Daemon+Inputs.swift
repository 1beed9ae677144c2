import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

extension Daemon {
    /// Binds the ingest sockets that are enabled and the control socket, or takes those systemd passed.
    static func bindInputs(
        _ configuration: DaemonConfiguration, intake: RecordIntake, shipper: Shipper,
        spool: any Spool & DeadLetterStore, logger: Logger
    ) async throws -> (inputs: [any Service], journal: JournalIngestServer?, status: DaemonStatusSource) {
        let group = MultiThreadedEventLoopGroup.singleton
        let hostname = configuration.hostname.isEmpty ? Hostname.current : configuration.hostname
        let parser = RecordParser(hostname: hostname)
        let ingest = configuration.ingest
        var passed = PassedSockets.take()
        let stream = SOCK_STREAM.rawValue, datagram = SOCK_DGRAM.rawValue
        let passedStream = ingest.stream.isEmpty
            ? nil : passed.take(name: "ingest", path: ingest.stream, type: Int32(stream))
        let passedDatagram = ingest.datagram.isEmpty
            ? nil : passed.take(name: "ingest-datagram", path: ingest.datagram, type: Int32(datagram))
        let passedControl = passed.take(name: "control", path: ingest.control, type: Int32(stream))
        let adopted = ingest.stream.isEmpty ? [] : passed.takeAll(name: ConnectionStore.name)
        if !adopted.isEmpty {
            logger.info(
                "serving the connections the service manager's store kept",
                metadata: ["logship.connections": "\(adopted.count)"])
        }
        for (socket, name) in [
            (passedStream, "ingest"), (passedDatagram, "ingest-datagram"), (passedControl, "control"),
        ] {
            if socket != nil { logger.info("using the socket systemd passed", metadata: ["logship.socket": "\(name)"]) }
        }
        for unclaimed in passed.unclaimed {
            logger.warning(
                "systemd passed a socket no input is configured for; closing it",
                metadata: [
                    "logship.socket.name": "\(unclaimed.name)", "logship.socket.descriptor": "\(unclaimed.descriptor)",
                ])
            close(unclaimed.descriptor)
        }

        var inputs: [any Service] = []
        var journal: JournalIngestServer?
        if configuration.journal.enabled {
            if configuration.spool.path == "memory" {
                logger.warning(
                    """
                    journal: with spool.path memory no cursor survives a restart; \
                    each start reads from journal.start_at
                    """)
            }
            journal = try await JournalIngestServer.open(
                configuration: configuration.journal, hostname: hostname, intake: intake, spool: spool,
                spoolBudget: configuration.spool.maxBytes, logger: logger)
            inputs.append(journal!)
        }
        let refusals = ConnectionRefusals()
        let statusSource = DaemonStatusSource(
            intake: intake, shipper: shipper, spool: spool, journal: journal, refusals: refusals,
            spoolBudget: configuration.spool.maxBytes)
        // After the spool and the journal are open: what is open now is what the daemon holds for itself.
        let budget = descriptorBudget(configuration, logger: logger)
        if !ingest.stream.isEmpty {
            let limits = UnixStreamListener.Limits(
                maximum: budget.ingest.maximum, maximumPerUser: budget.ingest.maximumPerUser,
                overCap: .hold(maximum: budget.ingestHeld))
            inputs.append(
                try await StreamIngestServer.bind(
                    path: ingest.stream, passed: passedStream, mode: ingest.socketMode,
                    maximumRecordBytes: ingest.maxRecordBytes,
                    limits: limits, adopted: adopted, store: ConnectionStore.fromEnvironment(), refusals: refusals,
                    parser: parser, intake: intake, group: group, logger: logger))
        }
        if !ingest.datagram.isEmpty {
            inputs.append(
                try DatagramIngestServer.bind(
                    path: ingest.datagram, passed: passedDatagram, mode: ingest.socketMode,
                    maximumRecordBytes: ingest.maxRecordBytes,
                    parser: parser, intake: intake, logger: logger))
        }
        let controlLimits = UnixStreamListener.Limits(
            maximum: budget.control.maximum, maximumPerUser: budget.control.maximumPerUser,
            operatorReserve: ControlServer.operatorReserve, requestDeadline: ingest.controlIdleTimeout)
        inputs.append(
            try await ControlServer.bind(
                path: ingest.control, passed: passedControl, mode: ingest.socketMode,
                maximumRecordBytes: ingest.maxRecordBytes,
                limits: controlLimits, hostname: hostname, intake: intake, shipper: shipper, spool: spool,
                statusSource: statusSource, refusals: refusals, group: group, logger: logger))
        return (inputs, journal, statusSource)
    }

    /// The connection caps within the open-file limit, and one warning when they are lower than configured.
    ///
    /// The headroom is for what the daemon opens as it runs: upload connections (two each, for a reconnect),
    /// metrics connections, journal files, SQLite's, the listening sockets, and short-lived ones (a peer's
    /// `/proc/<pid>/comm`, libdispatch's reads of `/proc`).
    private static func descriptorBudget(_ configuration: DaemonConfiguration, logger: Logger) -> DescriptorBudget {
        let limit = OpenFileLimit.current
        let open = OpenFileLimit.openNow
        let headroom = 64 + 2 * configuration.upload.maxInFlight + configuration.metrics.maxConnections
        let configured = DescriptorBudget.Places(
            maximum: configuration.ingest.maxConnections, maximumPerUser: configuration.ingest.maxConnectionsPerUser)
        let budget = DescriptorBudget(
            limit: limit, open: open, headroom: headroom, configured: configured,
            operatorReserve: ControlServer.operatorReserve)
        if budget.isBelow(configured) {
            logger.warning(
                """
                the open-file limit (\(limit)) allows \(budget.available) connections beside the \(open) descriptors \
                logshipd holds and \(headroom) it keeps in reserve: the ingest socket serves at most \
                \(budget.ingest.maximum) (ingest.max_connections \(configured.maximum)), \
                \(budget.ingest.maximumPerUser) per user \
                (ingest.max_connections_per_user \(configured.maximumPerUser)), the control socket \
                \(budget.control.maximum); raise LimitNOFILE to serve more
                """,
                metadata: [
                    "logship.limit.nofile": "\(limit)",
                    "logship.connections.maximum": "\(budget.ingest.maximum)",
                    "logship.connections.maximum_per_user": "\(budget.ingest.maximumPerUser)",
                    "logship.connections.control": "\(budget.control.maximum)",
                ])
        }
        return budget
    }
}
