import CUnixSocket
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix

/// A listening Unix stream socket that hands each connection, framed into records, to a handler together with
/// the peer's kernel-reported credentials.
///
/// Every connection is served in its own child task, so a client that connects and never writes, or writes a
/// byte a second, holds only its own task.
struct UnixStreamListener: Sendable {
    typealias Connection = NIOAsyncChannel<Frame, ByteBuffer>

    let path: String
    private let server: NIOAsyncChannel<(Connection, PeerCredentials), Never>

    private init(path: String, server: NIOAsyncChannel<(Connection, PeerCredentials), Never>) {
        self.path = path
        self.server = server
    }

    /// Binds `path`, replacing a stale socket file, and sets its mode.
    ///
    /// - Parameters:
    ///   - maximumFrameBytes: The longest record a connection may send; longer ones are cut and marked.
    /// - Throws: ``IngestError`` when the path is in use or cannot be bound.
    static func bind(
        path: String, mode: mode_t, maximumFrameBytes: Int, group: any EventLoopGroup
    ) async throws -> UnixStreamListener {
        try UnixSocketPath.prepare(path)
        let server: NIOAsyncChannel<(Connection, PeerCredentials), Never>
        do {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .bind(unixDomainSocketPath: path) { channel in
                    guard let options = channel as? any SocketOptionProvider else {
                        return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
                    }
                    let credentials: EventLoopFuture<cunixsocket_credentials> = options.unsafeGetSocketOption(
                        level: SocketOptionLevel(cunixsocket_sol_socket), name: SocketOptionName(cunixsocket_so_peercred))
                    return credentials.flatMapThrowing { credentials in
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(StreamFrameDecoder(maximumRecordBytes: maximumFrameBytes)))
                        // Read comm now: a short-lived client (logger) may be gone by the time its data is read.
                        return (try Connection(wrappingChannelSynchronously: channel), PeerCredentials(credentials))
                    }
                }
        } catch let error as IOError {
            throw IngestError.socketCall("bind", path: path, SystemError.describe(error.errnoCode))
        }
        try UnixSocketPath.setMode(path, mode: mode)
        return UnixStreamListener(path: path, server: server)
    }

    /// Accepts connections until the task is cancelled, then closes the socket and removes its file.
    ///
    /// Cancellation is how the listener is stopped, so it ends this method normally.
    ///
    /// - Parameter handler: Serves one connection; it must not throw, because one bad client must not take the
    ///   listener down.
    func serve(
        _ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void
    ) async throws {
        defer { unlink(path) }
        do {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await (connection, peer) in connections {
                        group.addTask {
                            await handler(connection, peer)
                        }
                    }
                }
            }
        } catch is CancellationError {
            return
        }
    }
}
