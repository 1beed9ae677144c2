import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Serves `GET /metrics` in Prometheus text format on `metrics.listen`.
///
/// At most `maximumConnections` are served at once (more are closed as soon as they are accepted), and a
/// connection whose client, with every scrape answered, does not complete its next request within `idleTimeout`
/// (or does not read an answer for that long) is closed: a scraper needs one, and nobody may hold many.
public final class MetricsServer: Service, Sendable {
    private let server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
    private let maximumConnections: Int
    private let openConnections = Mutex(0)
    private let exporter: MetricsExporter
    private let status: DaemonStatusSource
    private let logger: Logger

    /// The address it listens on (with the port chosen when 0 was asked for).
    public let address: SocketAddress

    /// Binds `host:port`.
    ///
    /// - Throws: When the address cannot be bound.
    init(
        host: String, port: Int, maximumConnections: Int, idleTimeout: Duration, exporter: MetricsExporter,
        status: DaemonStatusSource, logger: Logger
    ) async throws {
        do {
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(
                            RequestDeadlineHandler<HTTPServerRequestPart, HTTPServerResponsePart>(
                                timeout: idleTimeout,
                                requests: { if case .end = $0 { 1 } else { 0 } },
                                responses: { if case .end = $0 { 1 } else { 0 } }))
                        return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                            wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ListenError(host: host, port: port, underlying: error)
        }
        guard let address = server.channel.localAddress else { throw ChannelError.unknownLocalAddress }
        self.address = address
        self.maximumConnections = maximumConnections
        self.exporter = exporter
        self.status = status
        self.logger = logger
    }

    /// Serves scrapes until graceful shutdown, which closes the listening socket (so that connections it accepted
    /// are taken out and closed, never dropped).
    public func run() async throws {
        logger.info("metrics listening", metadata: ["logship.metrics.address": "\(address)"])
        let server = self.server
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        let admitted = openConnections.withLock { open in
                            guard open < maximumConnections else { return false }
                            open += 1
                            return true
                        }
                        guard admitted else {
                            group.addTask { try? await connection.executeThenClose { _, _ in } }
                            continue
                        }
                        group.addTask {
                            await self.serve(connection)
                            self.openConnections.withLock { $0 -= 1 }
                        }
                    }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            server.channel.close(promise: nil)
        }
    }

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        do {
            try await connection.executeThenClose { parts, writer in
                var head: HTTPRequestHead?
                for try await part in parts {
                    switch part {
                    case .head(let requestHead):
                        head = requestHead
                    case .body:
                        break
                    case .end:
                        guard let requestHead = head else { continue }
                        let found = requestHead.method == .GET
                            && requestHead.uri.split(separator: "?").first == "/metrics"
                        let body = found ? exporter.exposition(for: await status.status()) : Array("not found\n".utf8)
                        var responseHead = HTTPResponseHead(
                            version: requestHead.version, status: found ? .ok : .notFound)
                        responseHead.headers.add(
                            name: "Content-Type",
                            value: found ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain")
                        responseHead.headers.add(name: "Content-Length", value: String(body.count))
                        try await writer.write(.head(responseHead))
                        try await writer.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
                        try await writer.write(.end(nil))
                        head = nil
                        if !requestHead.isKeepAlive { return }
                    }
                }
            }
        } catch {
            logger.debug("metrics connection ended", metadata: ["logship.error": "\(error)"])
        }
    }
}
