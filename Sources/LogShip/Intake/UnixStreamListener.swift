import CUnixSocket
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// A listening Unix stream socket that hands each connection, framed into records, to a handler together with
/// the peer's kernel-reported credentials.
///
/// Every connection is served in its own child task, so a client that connects and never writes, or writes a
/// byte a second, holds only its own task. A ``ConnectionLimiter`` bounds how many are served at once; beyond it a
/// connection is closed as soon as it is accepted.
final class UnixStreamListener: Sendable {
    /// A connection: the frames of each read together, and the bytes to answer with.
    typealias Connection = NIOAsyncChannel<FrameRead, ByteBuffer>

    /// A connection reads ahead of its handler by at most two hand-overs of frames (``FrameBatcher``): a client
    /// writing faster than the spool commits waits in its socket, not in the daemon's memory.
    private static let connectionConfiguration = Connection.Configuration(
        backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2))

    /// How many connections the listener serves at once, and how long a request may take to arrive.
    struct Limits: Sendable {
        var maximum: Int
        var maximumPerUser: Int
        /// Places only root and logshipd's own user may take (see ``ConnectionLimiter``).
        var operatorReserve = 0
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

    let path: String
    /// Whether the listener created the socket file (and removes it); not when systemd passed the socket.
    private let ownsPath: Bool
    private let server: NIOAsyncChannel<(Connection, PeerCredentials), Never>
    private let accepted: AcceptedConnections<Connection>
    private let limiter: Mutex<ConnectionLimiter>
    private let logger: Logger

    private init(
        path: String, ownsPath: Bool, server: NIOAsyncChannel<(Connection, PeerCredentials), Never>,
        accepted: AcceptedConnections<Connection>, limits: Limits, logger: Logger
    ) {
        self.path = path
        self.ownsPath = ownsPath
        self.server = server
        self.accepted = accepted
        limiter = Mutex(ConnectionLimiter(
            maximum: limits.maximum, maximumPerUser: limits.maximumPerUser, operatorReserve: limits.operatorReserve,
            operators: [0, getuid()]))
        self.logger = logger
    }

    /// Binds `path`, replacing a stale socket file, and sets its mode; or serves `passed`, a listening socket
    /// systemd holds for `path` (socket activation), which it neither creates nor removes.
    ///
    /// - Parameters:
    ///   - passed: A listening socket passed by systemd, to use instead of binding.
    ///   - maximumFrameBytes: The longest record a connection may send; longer ones are cut and marked.
    ///   - limits: How many connections are served at once, in all and from one user.
    /// - Throws: ``IngestError`` when the path is in use or cannot be bound.
    static func bind(
        path: String, passed: Int32? = nil, mode: mode_t, maximumFrameBytes: Int, limits: Limits,
        group: any EventLoopGroup, logger: Logger
    ) async throws -> UnixStreamListener {
        let accepted = AcceptedConnections<Connection>()
        let initializer: @Sendable (any Channel) -> EventLoopFuture<(Connection, PeerCredentials)> = { channel in
            guard let options = channel as? any SocketOptionProvider else {
                return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
            }
            let credentials: EventLoopFuture<cunixsocket_credentials> = options.unsafeGetSocketOption(
                level: SocketOptionLevel(cunixsocket_sol_socket), name: SocketOptionName(cunixsocket_so_peercred))
            return credentials.flatMapThrowing { credentials in
                try channel.pipeline.syncOperations.addHandler(
                    ByteToMessageHandler(StreamFrameDecoder(maximumRecordBytes: maximumFrameBytes)))
                try channel.pipeline.syncOperations.addHandler(FrameBatcher())
                if let deadline = limits.requestDeadline {
                    try channel.pipeline.syncOperations.addHandler(RequestDeadlineHandler(timeout: deadline))
                }
                // Read comm now: a short-lived client (logger) may be gone by the time its data is read.
                let peer = PeerCredentials(credentials)
                return (try accepted.admit(channel) {
                    try Connection(wrappingChannelSynchronously: channel, configuration: Self.connectionConfiguration)
                }, peer)
            }
        }
        let bootstrap = ServerBootstrap(group: group).serverChannelOption(.backlog, value: 256)
        if let passed {
            let server = try await bootstrap.bind(passed, childChannelInitializer: initializer)
            return UnixStreamListener(
                path: path, ownsPath: false, server: server, accepted: accepted, limits: limits, logger: logger)
        }
        try UnixSocketPath.prepare(path)
        let server: NIOAsyncChannel<(Connection, PeerCredentials), Never>
        do {
            server = try await bootstrap.bind(unixDomainSocketPath: path, childChannelInitializer: initializer)
        } catch let error as IOError {
            throw IngestError.socketCall("bind", path: path, SystemError.describe(error.errnoCode))
        }
        try UnixSocketPath.setMode(path, mode: mode)
        return UnixStreamListener(
            path: path, ownsPath: true, server: server, accepted: accepted, limits: limits, logger: logger)
    }

    /// Accepts connections until ``close()`` is called, then stops serving the connections still open, and
    /// removes the socket file it created.
    ///
    /// - Important: Stop the listener with ``close()``, not by cancelling the task: accepted connections wait in
    ///   the server channel's stream until this loop takes them, and cancelling the loop drops them without
    ///   closing them, which traps in NIO ("Deinited NIOAsyncWriter without calling finish()"). Closing ends
    ///   the stream after the connections it holds, so each is taken out and closed.
    /// - Parameter handler: Serves one connection; it must not throw, because one bad client must not take the
    ///   listener down.
    func serve(
        _ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void
    ) async throws {
        defer { if ownsPath { unlink(path) } }
        do {
            try await serveUntilClosed(handler)
        } catch is CancellationError {
            // Cancelled outright (a forced shutdown): nothing more to do than for a close.
        }
    }

    private func serveUntilClosed(
        _ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void
    ) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            defer {
                // Connections set up as the listener closed, which the loop never took: closed unserved.
                for connection in accepted.close() {
                    group.addTask { try? await connection.executeThenClose { _, _ in } }
                }
            }
            try await server.executeThenClose { connections in
                for try await (connection, peer) in connections {
                    accepted.take(connection.channel)
                    guard admit(peer) else {
                        // Closed at once, through the async channel so that its writer is finished properly;
                        // a failure to close has nothing to tell.
                        group.addTask { try? await connection.executeThenClose { _, _ in } }
                        continue
                    }
                    group.addTask {
                        await handler(connection, peer)
                        self.limiter.withLock { $0.release(uid: peer.uid) }
                    }
                }
            }
            // The listener is closed: connections still open (idle clients) are ended too.
            group.cancelAll()
        }
    }

    /// Stops accepting: ``serve(_:)`` takes what was already accepted, closes it, and returns.
    func close() {
        server.channel.close(promise: nil)
    }

    private func admit(_ peer: PeerCredentials) -> Bool {
        let admission = limiter.withLock { $0.admit(uid: peer.uid, now: .now) }
        guard case .refuse(let report) = admission else { return true }
        if let report {
            let limits = limiter.withLock { ($0.maximum, $0.maximumPerUser) }
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
}
