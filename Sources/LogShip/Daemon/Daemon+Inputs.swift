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
        let limits = UnixStreamListener.Limits(maximum: ingest.maxConnections, maximumPerUser: ingest.maxConnectionsPerUser)
        var controlLimits = limits
        controlLimits.operatorReserve = ControlServer.operatorReserve
        controlLimits.requestDeadline = ingest.controlIdleTimeout
        var passed = PassedSockets.take()
        let stream = SOCK_STREAM.rawValue, datagram = SOCK_DGRAM.rawValue
        let passedStream = ingest.stream.isEmpty ? nil : passed.take(name: "ingest", path: ingest.stream, type: Int32(stream))
        let passedDatagram = ingest.datagram.isEmpty
            ? nil : passed.take(name: "ingest-datagram", path: ingest.datagram, type: Int32(datagram))
        let passedControl = passed.take(name: "control", path: ingest.control, type: Int32(stream))
        for (socket, name) in [(passedStream, "ingest"), (passedDatagram, "ingest-datagram"), (passedControl, "control")] {
            if socket != nil { logger.info("using the socket systemd passed", metadata: ["logship.socket": "\(name)"]) }
        }
        for unclaimed in passed.unclaimed {
            logger.warning(
                "systemd passed a socket no input is configured for; closing it",
                metadata: ["logship.socket.name": "\(unclaimed.name)", "logship.socket.descriptor": "\(unclaimed.descriptor)"])
            close(unclaimed.descriptor)
        }

        var inputs: [any Service] = []
        var journal: JournalIngestServer?
        if configuration.journal.enabled {
            if configuration.spool.path == "memory" {
                logger.warning("journal: with spool.path memory no cursor survives a restart; each start reads from journal.start_at")
            }
            journal = try await JournalIngestServer.open(
                configuration: configuration.journal, hostname: hostname, intake: intake, spool: spool,
                spoolBudget: configuration.spool.maxBytes, logger: logger)
            inputs.append(journal!)
        }
        let statusSource = DaemonStatusSource(
            intake: intake, shipper: shipper, spool: spool, journal: journal, spoolBudget: configuration.spool.maxBytes)
        if !ingest.stream.isEmpty {
            inputs.append(
                try await StreamIngestServer.bind(
                    path: ingest.stream, passed: passedStream, mode: ingest.socketMode, maximumRecordBytes: ingest.maxRecordBytes,
                    limits: limits, parser: parser, intake: intake, group: group, logger: logger))
        }
        if !ingest.datagram.isEmpty {
            inputs.append(
                try DatagramIngestServer.bind(
                    path: ingest.datagram, passed: passedDatagram, mode: ingest.socketMode, maximumRecordBytes: ingest.maxRecordBytes,
                    parser: parser, intake: intake, logger: logger))
        }
        inputs.append(
            try await ControlServer.bind(
                path: ingest.control, passed: passedControl, mode: ingest.socketMode, maximumRecordBytes: ingest.maxRecordBytes,
                limits: controlLimits, hostname: hostname, intake: intake, shipper: shipper, spool: spool,
                statusSource: statusSource, group: group, logger: logger))
        return (inputs, journal, statusSource)
    }
}
