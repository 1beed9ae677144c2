import Logging
import NIOCore
import ServiceLifecycle

/// The ingest stream socket: newline-delimited or octet-counted records from `logger -u`, applications and
/// `socat`.
public struct StreamIngestServer: Service {
    private let listener: UnixStreamListener
    private let parser: RecordParser
    private let intake: RecordIntake
    private let logger: Logger

    /// Binds the socket; the server accepts connections once ``run()`` is called.
    ///
    /// - Parameters:
    ///   - passed: The socket systemd holds for `path` (socket activation), to use instead of binding.
    ///   - limits: How many connections are served at once (`ingest.max_connections`).
    ///   - adopted: Connections the service manager's store kept across a restart.
    ///   - store: Where a stop hands the connections, when the service manager keeps them.
    ///   - refusals: Where refused connections are counted.
    /// - Throws: ``IngestError`` when the path is held by a live process or cannot be bound.
    static func bind(
        path: String,
        passed: Int32?,
        mode: UInt32,
        maximumRecordBytes: Int,
        limits: UnixStreamListener.Limits,
        adopted: [Int32],
        store: ConnectionStore?,
        refusals: ConnectionRefusals,
        parser: RecordParser,
        intake: RecordIntake,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws -> StreamIngestServer {
        let listener = try UnixStreamListener.bind(
            path: path, passed: passed, mode: mode, maximumFrameBytes: maximumRecordBytes, limits: limits,
            adopted: adopted, store: store, refusals: refusals, group: group, logger: logger)
        return StreamIngestServer(listener: listener, parser: parser, intake: intake, logger: logger)
    }

    /// Serves connections until graceful shutdown, when intake stops and the socket is removed.
    public func run() async throws {
        logger.info("ingest stream socket listening", metadata: ["logship.socket": "\(listener.path)"])
        try await listener.serveUntilGracefulShutdown { connection, peer in
            await serve(connection, peer: peer)
        }
    }

    private func serve(_ connection: UnixStreamListener.Connection, peer: PeerCredentials) async {
        do {
            try await connection.executeThenClose { reads, _ in
                for try await read in reads {
                    intake.countBlank(read.blank)
                    let receivedAt = Timestamp.now()
                    try await intake.enqueue(
                        read.frames.map { parser.encode($0, source: .socket, peer: peer, receivedAt: receivedAt) },
                        from: peer)
                }
            }
        } catch is CancellationError {
        } catch {
            logger.warning(
                "ingest connection ended with an error",
                metadata: ["logship.peer.pid": "\(peer.pid)", "logship.error": "\(error)"])
        }
    }
}
