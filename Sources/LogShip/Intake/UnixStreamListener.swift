#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A listening Unix stream socket that hands each connection, framed into records, to a handler together with
/// the peer's kernel-reported credentials.
///
/// Connections are accepted by ``UnixStreamAcceptor`` on a thread of their own and each is served in its own
/// child task, so a client that connects and never writes, or writes a byte a second, holds only its own task. A
/// ``ConnectionLimiter`` bounds how many are served at once; beyond it a connection is closed as soon as it is
/// accepted.
final class UnixStreamListener: Sendable {
    /// A connection: the frames of each read together, and the bytes to answer with.
    typealias Connection = NIOAsyncChannel<FrameRead, ByteBuffer>

    /// A connection reads ahead of its handler by at most two hand-overs of frames (``FrameBatcher``): a client
    /// writing faster than the spool commits waits in its socket, not in the daemon's memory.
    private static let connectionConfiguration = Connection.Configuration(
        backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2))

    /// How long a stop waits for the clients of open connections to end them, and then for their handlers.
    static let drainTimeout = Duration.seconds(2)

    /// How many connections the listener serves at once, and how long a request may take to arrive.
    struct Limits: Sendable {
        var maximum: Int
        var maximumPerUser: Int
        /// Places only root and logshipd's own user may take (see ``ConnectionLimiter``).
        var operatorReserve: Int
        /// For a request/response socket: how long a client with every request answered has to send the next
        /// one before its connection is closed (``RequestDeadlineHandler``); `nil` for the ingest socket, whose
        /// clients may stay quiet for as long as they like.
        var requestDeadline: Duration?

        init(maximum: Int, maximumPerUser: Int, operatorReserve: Int = 0, requestDeadline: Duration? = nil) {
            self.maximum = maximum
            self.maximumPerUser = min(maximumPerUser, maximum)
            self.operatorReserve = operatorReserve
            self.requestDeadline = requestDeadline
        }
    }

    var path: String { acceptor.path }
    private let acceptor: UnixStreamAcceptor
    private let maximumFrameBytes: Int
    private let requestDeadline: Duration?
    private let greeting: [UInt8]
    private let refusal: [UInt8]
    private let served = ServedConnections()
    private let limiter: Mutex<ConnectionLimiter>
    private let group: any EventLoopGroup
    private let logger: Logger

    private init(
        acceptor: UnixStreamAcceptor, maximumFrameBytes: Int, limits: Limits, greeting: [UInt8], refusal: [UInt8],
        group: any EventLoopGroup, logger: Logger
    ) {
        self.acceptor = acceptor
        self.maximumFrameBytes = maximumFrameBytes
        self.greeting = greeting
        self.refusal = refusal
        requestDeadline = limits.requestDeadline
        limiter = Mutex(ConnectionLimiter(
            maximum: limits.maximum, maximumPerUser: limits.maximumPerUser, operatorReserve: limits.operatorReserve,
            operators: [0, getuid()]))
        self.group = group
        self.logger = logger
    }

    /// Binds `path`, replacing a stale socket file, and sets its mode; or serves `passed`, a listening socket
    /// systemd holds for `path` (socket activation), which it neither creates, removes nor listens on again.
    ///
    /// - Parameters:
    ///   - passed: A listening socket passed by systemd, to use instead of binding.
    ///   - maximumFrameBytes: The longest record a connection may send; longer ones are cut and marked.
    ///   - limits: How many connections are served at once, in all and from one user.
    ///   - greeting: Written to every connection admitted, as soon as it is accepted and on the accepting thread,
    ///     so that a client waiting for it hears at once even while the daemon is busy (the control socket's
    ///     ``ControlProtocol/greeting``); empty for none.
    ///   - refusal: Written instead to a connection the limits refuse, before it is closed (the control socket's
    ///     ``ControlProtocol/refusal(_:)``); empty for none.
    ///   - group: Where the connections' reads and writes run.
    /// - Throws: ``IngestError`` when the path is in use or cannot be bound.
    static func bind(
        path: String, passed: Int32? = nil, mode: mode_t, maximumFrameBytes: Int, limits: Limits,
        greeting: [UInt8] = [], refusal: [UInt8] = [], group: any EventLoopGroup, logger: Logger
    ) throws -> UnixStreamListener {
        let acceptor = try passed.map { try UnixStreamAcceptor.adopt(descriptor: $0, path: path) }
            ?? UnixStreamAcceptor.bind(path: path, mode: mode, backlog: SOMAXCONN)
        return UnixStreamListener(
            acceptor: acceptor, maximumFrameBytes: maximumFrameBytes, limits: limits, greeting: greeting,
            refusal: refusal, group: group,
            logger: logger)
    }

    /// Accepts connections until ``close()`` is called, serves what was accepted until each client ends it or
    /// ``drainTimeout`` passes, and closes the socket (removing the file it created).
    ///
    /// A stop accepts nothing more (under socket activation, connections not yet accepted wait in the kernel for
    /// the next daemon; a socket the daemon bound loses its file first, and what was queued is taken), and every
    /// connection accepted is served: what its client sent before it is read and handed on. A client still
    /// connected after ``drainTimeout`` has its input closed, so that what was read is still handed on; a handler
    /// that has not ended ``drainTimeout`` later is cancelled.
    ///
    /// - Parameter handler: Serves one connection; it must not throw, because one bad client must not take the
    ///   listener down.
    func serve(_ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void) async throws {
        // The blocking poll/accept loop gets a thread of its own, off the cooperative pool.
        let acceptThread = NIOThreadPool(numberOfThreads: 1)
        acceptThread.start()
        let served = await Result {
            try await withTaskCancellationHandler {
                // The accept loop runs on an event loop, not the cooperative pool: accepting the next client (and
                // greeting it) never waits for a pool thread that busy tasks hold.
                try await withTaskExecutorPreference(EventLoopTaskExecutor(group.next())) {
                    try await serveUntilClosed(acceptingOn: acceptThread, handler)
                }
            } onCancel: {
                acceptor.wake()
            }
        }
        acceptor.close()
        try? await acceptThread.shutdownGracefully()
        switch served {
        case .success, .failure(is CancellationError):
            // Cancelled outright (a forced shutdown): nothing more to do than for a close.
            return
        case .failure(let error):
            throw error
        }
    }

    private func serveUntilClosed(
        acceptingOn acceptThread: NIOThreadPool, _ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void
    ) async throws {
        let acceptor = self.acceptor
        try await withThrowingDiscardingTaskGroup { group in
            func serve(_ accepted: UnixStreamAcceptor.Accepted) async {
                let connection: Connection
                do {
                    connection = try await wrap(accepted.descriptor)
                } catch {
                    // NIO took the socket, and closes it, unless making it non-blocking failed (fcntl), which
                    // leaves one descriptor open: nothing here can tell the two apart.
                    release(accepted.peer)
                    logger.warning("a connection could not be set up", metadata: ["logship.error": "\(error)"])
                    return
                }
                // Never refused: this listener's stop closes inputs, and never calls `closeAll()`.
                _ = served.insert(connection.channel)
                // On the channel's own loop: the reads reach the task without a thread switch, and the frames are
                // parsed where they were read (see docs/ARCHITECTURE.md).
                group.addTask(executorPreference: EventLoopTaskExecutor(connection.channel.eventLoop)) {
                    await handler(connection, accepted.peer)
                    self.served.remove(connection.channel)
                    self.release(accepted.peer)
                }
            }
            while true {
                do {
                    // Greeted on the accept thread, the moment it is accepted.
                    guard let accepted = try await acceptThread.runIfActive({ try self.acceptAdmitted() }) else { break }
                    await serve(accepted)
                } catch let error as IngestError {
                    // Out of descriptors or memory: the connection waits in the queue. Waiting a moment keeps a
                    // persistent failure from spinning.
                    logger.error("accepting a connection failed", metadata: ["logship.error": "\(error)"])
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // A socket the daemon bound closes with it: no client may connect to it from now on, and what clients
            // queued already is served. (One systemd passed keeps its queue for the next daemon.)
            if acceptor.ownsPath {
                acceptor.stopListening()
                for accepted in acceptor.acceptQueued() where admitAndGreet(accepted) {
                    await serve(accepted)
                }
            }
            if await !served.waitUntilEmpty(within: Self.drainTimeout) {
                served.closeInputs()
                if await !served.waitUntilEmpty(within: Self.drainTimeout) {
                    group.cancelAll()
                }
            }
        }
    }

    /// Blocks until a connection the limits admit is accepted, closing those they refuse, and greets it; `nil`
    /// once ``close()`` is called. Runs on the accept thread, so that the greeting goes out the moment the
    /// connection is accepted.
    private func acceptAdmitted() throws -> UnixStreamAcceptor.Accepted? {
        while let accepted = try acceptor.accept() {
            if admitAndGreet(accepted) { return accepted }
        }
        return nil
    }

    /// Closes a connection the limits refuse, and greets one they admit; returns whether it was admitted.
    private func admitAndGreet(_ accepted: UnixStreamAcceptor.Accepted) -> Bool {
        let admitted = admit(accepted.peer)
        let line = admitted ? greeting : refusal
        if !line.isEmpty {
            // A new connection's send buffer is empty: a short line always fits at once.
            _ = Glibc.send(accepted.descriptor, line, line.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        }
        if !admitted { Glibc.close(accepted.descriptor) }
        return admitted
    }

    /// An accepted socket as a channel that frames what it reads.
    private func wrap(_ descriptor: Int32) async throws -> Connection {
        let (maximumFrameBytes, requestDeadline) = (self.maximumFrameBytes, self.requestDeadline)
        return try await ClientBootstrap(group: group)
            // A read cycle is at most four reads of at most 64 KiB (NIO's defaults, stated): what one cycle can
            // hand the intake is bounded by it (``FrameBatcher``).
            .channelOption(.maxMessagesPerRead, value: 4)
            .channelOption(
                .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 64 << 10))
            .withConnectedSocket(descriptor) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    ByteToMessageHandler(StreamFrameDecoder(maximumRecordBytes: maximumFrameBytes)))
                try channel.pipeline.syncOperations.addHandler(FrameBatcher())
                if let requestDeadline {
                    try channel.pipeline.syncOperations.addHandler(RequestDeadlineHandler(controlTimeout: requestDeadline))
                }
                return try Connection(wrappingChannelSynchronously: channel, configuration: Self.connectionConfiguration)
            }
        }
    }

    /// Serves as ``serve(_:)`` does until graceful shutdown, when it stops accepting.
    func serveUntilGracefulShutdown(
        _ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void
    ) async throws {
        try await withGracefulShutdownHandler {
            try await serve(handler)
        } onGracefulShutdown: {
            self.close()
        }
    }

    /// Stops accepting: ``serve(_:)`` serves what was already accepted, and returns once it is done.
    func close() {
        acceptor.wake()
    }

    private func admit(_ peer: PeerCredentials) -> Bool {
        let (admission, limits) = limiter.withLock { limiter in
            (limiter.admit(uid: peer.uid, now: .now), (limiter.maximum, limiter.maximumPerUser))
        }
        guard case .refuse(let report) = admission else { return true }
        if let report {
            logger.warning(
                "connection limit reached; closing new connections",
                metadata: [
                    "logship.socket": "\(path)",
                    "logship.connections.refused": "\(report)",
                    "logship.connections.maximum": "\(limits.0)",
                    "logship.connections.maximum_per_user": "\(limits.1)",
                    "logship.peer.uid": "\(peer.uid)",
                    "logship.peer.pid": "\(peer.pid)",
                    "logship.peer.comm": "\(peer.comm ?? "?")",
                ])
        }
        return false
    }

    private func release(_ peer: PeerCredentials) {
        limiter.withLock { $0.release(uid: peer.uid) }
    }
}
