import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// HTTP/1.1 POSTs to one endpoint over keep-alive connections, everything on one event loop: what carries batches
/// to the remote.
///
/// A request takes an idle connection or opens one, and gives it back when the response lets it stay open; the
/// requests in flight on the loop bound its connections, and the shipper caps those. One timeout bounds the whole
/// exchange, connecting and the response body included. A request whose reused connection turns out to have been
/// closed by the remote before any answer (the remote ended an idle keep-alive connection just as it was taken) is
/// sent once more on a new connection; nothing else is retried here, since retries are the shipper's to decide.
/// Each request is an ``UploadExchange``, whose ``UploadExchangeStateMachine`` decides; the client keeps the pool.
///
/// It does only what the uploader needs, which is why it is not async-http-client: no hop when the caller runs on
/// the loop (the delivery tasks do), no task group or future per request, a timeout that is a scheduled callback,
/// the head and body written together in one flush.
final class UploadClient: Sendable {
    /// Connections idle for this long are closed.
    static let idleTimeout = TimeAmount.seconds(60)

    /// Opens a connection within `timeout`, its pipeline ending in an ``UploadConnectionHandler``.
    typealias Connector = @Sendable (_ timeout: TimeAmount) -> EventLoopFuture<any Channel>

    let eventLoop: any EventLoop
    let endpoint: UploadEndpoint
    private let connector: Connector
    private let pool: NIOLoopBoundBox<Pool>

    private struct Pool {
        var idle: [UploadConnection] = []
        /// Replaced by a client for other settings: requests that started with this one still run, each on a
        /// connection closed after it.
        var isRetired = false
        var isShutDown = false
    }

    /// - Parameter tls: The context of an `https` endpoint's connections; `nil` for `http`.
    convenience init(endpoint: UploadEndpoint, tls: NIOSSLContext?, eventLoop: any EventLoop) {
        self.init(endpoint: endpoint, eventLoop: eventLoop, connector: Self.bootstrap(endpoint, tls, eventLoop))
    }

    /// - Parameter connector: How connections are opened, on `eventLoop`.
    init(endpoint: UploadEndpoint, eventLoop: any EventLoop, connector: @escaping Connector) {
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.connector = connector
        pool = .makeBoxSendingValue(Pool(), eventLoop: eventLoop)
    }

    /// Posts `body` to the endpoint's target and returns the response, of whatever status.
    ///
    /// - Parameters:
    ///   - headers: The request's headers but `Host` and `Content-Length`, which this adds.
    ///   - excerptLimit: How much of the response body to keep; the rest is read and dropped.
    /// - Throws: ``UploadClientError``, `CancellationError` when the calling task is cancelled (the connection is
    ///   closed), or the connection's own error (refused, reset, TLS).
    func post(
        headers: HTTPHeaders, body: ByteBuffer, timeout: TimeAmount, excerptLimit: Int
    ) async throws -> UploadResponse {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: endpoint.target)
        head.headers.reserveCapacity(headers.count + 2)
        head.headers.add(name: "Host", value: endpoint.hostHeader)
        head.headers.add(contentsOf: headers)
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        let exchange = UploadExchange(
            UploadRequest(head: head, body: body, excerptLimit: excerptLimit, deadline: eventLoop.now + timeout),
            client: self)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if eventLoop.inEventLoop {
                    exchange.start(answering: continuation)
                } else {
                    eventLoop.execute { exchange.start(answering: continuation) }
                }
            }
        } onCancel: {
            self.eventLoop.execute { exchange.cancel() }
        }
    }

    /// Closes the idle connections; connections in use close when their response is in. Later requests fail.
    func shutdown() {
        eventLoop.execute {
            self.pool.value.isShutDown = true
            self.closeIdle()
        }
    }

    /// Closes the idle connections and keeps none from now on, but still serves requests: for a client replaced
    /// by one with new settings, which requests that began with the old settings may still reach.
    func retire() {
        eventLoop.execute {
            self.pool.value.isRetired = true
            self.closeIdle()
        }
    }

    private func closeIdle() {
        let idle = pool.value.idle
        pool.value.idle = []
        for connection in idle { connection.channel.close(promise: nil) }
    }

    // MARK: The pool, for the exchanges on the loop

    var isShutDown: Bool { pool.value.isShutDown }

    /// The connection idle the shortest time, if any is still open.
    func takeIdleConnection() -> UploadConnection? {
        while let connection = pool.value.idle.popLast() {
            if connection.channel.isActive { return connection }
        }
        return nil
    }

    /// Keeps a connection whose response left it open for the next request, unless the client keeps none.
    func returnToPool(_ connection: UploadConnection) {
        guard connection.channel.isActive, !pool.value.isShutDown, !pool.value.isRetired else {
            connection.channel.close(promise: nil)
            return
        }
        pool.value.idle.append(connection)
    }

    /// Opens a connection, which leaves the pool when it closes.
    func connect(timeout: TimeAmount) -> EventLoopFuture<UploadConnection> {
        let pool = self.pool
        return connector(timeout).flatMapThrowing { channel in
            let handler = try channel.pipeline.syncOperations.handler(type: UploadConnectionHandler.self)
            // A connection the remote closes while idle leaves the pool.
            channel.closeFuture.whenComplete { _ in
                pool.value.idle.removeAll { $0.channel === channel }
            }
            return UploadConnection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
        }
    }

    /// TCP to the endpoint, TLS for `https`, HTTP/1.1, idle detection and an ``UploadConnectionHandler``.
    private static func bootstrap(
        _ endpoint: UploadEndpoint, _ tls: NIOSSLContext?, _ eventLoop: any EventLoop
    ) -> Connector {
        { timeout in
            ClientBootstrap(group: eventLoop)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        if let tls {
                            let serverName = endpoint.serverName
                            try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        }
                        try pipeline.addHTTPClientHandlers()
                        // Reads alone tell an idle connection: every request is answered, and a write-watching
                        // handler would cost a promise per write.
                        try pipeline.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout))
                        try pipeline.addHandler(UploadConnectionHandler())
                    }
                }
                .connect(host: endpoint.connectHost, port: endpoint.port)
        }
    }
}
