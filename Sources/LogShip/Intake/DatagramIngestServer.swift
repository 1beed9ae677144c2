import Logging
import NIOPosix
import ServiceLifecycle

/// The ingest datagram socket: one record per datagram, for `/dev/log`-style clients (`logger -d`, glibc
/// `syslog()`).
public struct DatagramIngestServer: Service {
    /// How many queued datagrams are read per wake-up before they are spooled together, and about how many bytes
    /// of them: what does not fit waits in the socket's queue.
    private static let batchLimit = (datagrams: 256, bytes: 1 << 20)

    private let socket: UnixDatagramSocket
    private let parser: RecordParser
    private let intake: RecordIntake
    private let logger: Logger

    /// Binds the socket; datagrams queue in the kernel until ``run()`` reads them.
    ///
    /// - Throws: ``IngestError`` when the path is held by a live process or cannot be bound.
    /// - Parameter passed: The socket systemd holds for `path` (socket activation), to use instead of binding.
    static func bind(
        path: String, passed: Int32?, mode: UInt32, maximumRecordBytes: Int, parser: RecordParser,
        intake: RecordIntake, logger: Logger
    ) throws -> DatagramIngestServer {
        let socket = try passed.map {
            try UnixDatagramSocket.adopt(descriptor: $0, path: path, maximumRecordBytes: maximumRecordBytes)
        } ?? UnixDatagramSocket.bind(path: path, mode: mode, maximumRecordBytes: maximumRecordBytes)
        return DatagramIngestServer(socket: socket, parser: parser, intake: intake, logger: logger)
    }

    /// Reads datagrams until graceful shutdown or cancellation, then closes the socket.
    public func run() async throws {
        logger.info("ingest datagram socket listening", metadata: ["logship.socket": "\(socket.path)"])
        // The blocking poll/recvmsg loop gets a thread of its own, off the cooperative pool, and the task runs
        // there too: a read's records are parsed and handed to the spool on the thread that read them. Nothing
        // else runs on this loop, so blocking it in `receive` holds up no one.
        let readerThread = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { socket.close() }
        do {
            try await withTaskExecutorPreference(EventLoopTaskExecutor(readerThread.next())) {
                try await withTaskCancellationOrGracefulShutdownHandler {
                    try await receiveUntilStopped()
                } onCancelOrGracefulShutdown: {
                    // No read waits for room in the spool any more: room may come only from the shipper, which
                    // stops after the inputs.
                    intake.stopHoldingSenders()
                    socket.wake()
                }
            }
        } catch {
            try? await readerThread.shutdownGracefully()
            throw error
        }
        try await readerThread.shutdownGracefully()
    }

    private func receiveUntilStopped() async throws {
        var buffer = socket.makeReceiveBuffer()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let datagrams: [UnixDatagramSocket.Datagram]
            do {
                // Nil once woken for shutdown.
                guard let received = try socket.receive(
                    limit: Self.batchLimit.datagrams, bytes: Self.batchLimit.bytes, into: &buffer)
                else { return }
                datagrams = received
            } catch let error as IngestError {
                // A failed receive (ENOMEM, ENOBUFS, …) loses at most what it was reading; the socket goes on
                // serving. Waiting a moment keeps a persistent failure from spinning.
                logger.error("ingest datagram receive failed", metadata: ["logship.error": "\(error)"])
                try await Task.sleep(for: .milliseconds(100))
                continue
            }
            let receivedAt = Timestamp.now()
            let withText = datagrams.filter { !$0.frame.isBlank }
            intake.countBlank(datagrams.count - withText.count)
            do {
                try await enqueue(withText, receivedAt: receivedAt)
            } catch let error as SpoolError where error == .closed {
                return
            } catch {
                logger.error(
                    "datagram records were not stored",
                    metadata: ["logship.error": "\(error)", "logship.records": "\(withText.count)"])
            }
        }
    }

    /// Hands datagrams to the intake in runs from one user, in order: each user's crash claims are weighed
    /// against its own budget.
    private func enqueue(_ datagrams: [UnixDatagramSocket.Datagram], receivedAt: Timestamp) async throws {
        var start = datagrams.startIndex
        while start < datagrams.endIndex {
            let sender = datagrams[start].peer
            let end = datagrams[start...].firstIndex { $0.peer?.uid != sender?.uid } ?? datagrams.endIndex
            try await intake.enqueue(
                datagrams[start..<end].map {
                    parser.encode($0.frame, source: .datagram, peer: $0.peer, receivedAt: receivedAt)
                },
                from: sender)
            start = end
        }
    }
}
