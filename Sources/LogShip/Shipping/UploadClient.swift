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
///
/// It does only what the uploader needs, which is why it is not async-http-client: no hop when the caller runs on
/// the loop (the delivery tasks do), no task group, future or dispatch timer per request, the head and body in one
/// write. With one record per request, what a request costs besides is most of what delivery costs.
final class UploadClient: Sendable {
    /// Connections idle for this long are closed.
    static let idleTimeout = TimeAmount.seconds(60)

    let eventLoop: any EventLoop
    private let endpoint: UploadEndpoint
    private let tls: NIOSSLContext?
    private let pool: NIOLoopBoundBox<Pool>

    /// A connection and the handler at the end of its pipeline, found once when it connected.
    private struct Connection: Sendable {
        var channel: any Channel
        var handler: NIOLoopBound<UploadConnectionHandler>
    }

    private struct Pool {
        var idle: [Connection] = []
        /// Replaced by a client for other settings: requests that started with this one still run, each on a
        /// connection closed after it.
        var isRetired = false
        var isShutDown = false
    }

    /// Where one request has got to, touched only on the loop.
    private enum Exchange {
        /// `post` has not reached the loop yet.
        case waiting
        /// Cancelled before it reached the loop: it ends there with this error, sending nothing.
        case cancelled
        case running(Running)
        case finished
    }

    /// A request on its way: what to send, whom to answer, and the connection and timer it holds. A class, so that
    /// the steps of an exchange share it instead of copying it in and out of ``Exchange``.
    private final class Running {
        let request: Request
        let continuation: CheckedContinuation<UploadResponse, any Error>
        var connection: Connection?
        var timeout: NIOScheduledCallback?

        init(request: Request, continuation: CheckedContinuation<UploadResponse, any Error>) {
            self.request = request
            self.continuation = continuation
        }
    }

    /// - Parameter tls: The context of an `https` endpoint's connections; `nil` for `http`.
    init(endpoint: UploadEndpoint, tls: NIOSSLContext?, eventLoop: any EventLoop) {
        self.endpoint = endpoint
        self.tls = tls
        self.eventLoop = eventLoop
        pool = .makeBoxSendingValue(Pool(), eventLoop: eventLoop)
    }

    /// Posts `body` to the endpoint's target and returns the response, of whatever status.
    ///
    /// - Parameters:
    ///   - headers: The request's headers but `Host` and `Content-Length`, which this adds.
    ///   - excerptLimit: How much of the response body to keep; the rest is read and dropped.
    /// - Throws: ``UploadClientError``, `CancellationError` when the calling task is cancelled (the connection is
    ///   closed), or the connection's own error (refused, reset, TLS).
    func post(headers: HTTPHeaders, body: ByteBuffer, timeout: TimeAmount, excerptLimit: Int) async throws -> UploadResponse {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: endpoint.target)
        head.headers.reserveCapacity(headers.count + 2)
        head.headers.add(name: "Host", value: endpoint.hostHeader)
        head.headers.add(contentsOf: headers)
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        let deadline = NIODeadline.now() + timeout
        let exchange = NIOLoopBoundBox.makeBoxSendingValue(Exchange.waiting, eventLoop: eventLoop)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let request = Request(head: head, body: body, excerptLimit: excerptLimit, deadline: deadline)
                if eventLoop.inEventLoop {
                    start(request, exchange, continuation)
                } else {
                    eventLoop.execute { self.start(request, exchange, continuation) }
                }
            }
        } onCancel: {
            self.eventLoop.execute { self.abandon(exchange, with: CancellationError()) }
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

    private struct Request: Sendable {
        var head: HTTPRequestHead
        var body: ByteBuffer
        var excerptLimit: Int
        var deadline: NIODeadline
    }

    // MARK: On the loop

    private func start(
        _ request: Request, _ exchange: NIOLoopBoundBox<Exchange>,
        _ continuation: CheckedContinuation<UploadResponse, any Error>
    ) {
        guard case .waiting = exchange.value else {
            continuation.resume(throwing: CancellationError())
            return
        }
        guard !pool.value.isShutDown else {
            exchange.value = .finished
            continuation.resume(throwing: UploadClientError.shutDown)
            return
        }
        let running = Running(request: request, continuation: continuation)
        do {
            running.timeout = try eventLoop.scheduleCallback(
                at: request.deadline, handler: TimeoutHandler(client: self, exchange: exchange))
        } catch {
            // The loop is shutting down.
            exchange.value = .finished
            continuation.resume(throwing: error)
            return
        }
        exchange.value = .running(running)
        if let connection = takeIdle() {
            send(on: connection, reused: true, exchange)
        } else {
            connectAndSend(exchange)
        }
    }

    /// Ends a request that timed out, with the status of its response if the head had arrived.
    private struct TimeoutHandler: NIOScheduledCallbackHandler {
        let client: UploadClient
        let exchange: NIOLoopBoundBox<Exchange>

        func handleScheduledCallback(eventLoop: some EventLoop) {
            guard case .running(let running) = exchange.value else { return }
            client.abandon(exchange, with: UploadClientError.timedOut(status: running.connection?.handler.value.responseStatus))
        }
    }

    private func connectAndSend(_ exchange: NIOLoopBoundBox<Exchange>) {
        guard case .running(let running) = exchange.value else { return }
        connect(timeout: running.request.deadline - .now()).whenComplete { result in
            switch result {
            case .success(let connection):
                guard case .running = exchange.value else {
                    connection.channel.close(promise: nil)
                    return
                }
                self.send(on: connection, reused: false, exchange)
            case .failure(let error):
                self.finish(exchange, .failure(error))
            }
        }
    }

    private func send(on connection: Connection, reused: Bool, _ exchange: NIOLoopBoundBox<Exchange>) {
        guard case .running(let running) = exchange.value else { return }
        running.connection = connection
        let request = running.request
        connection.handler.value.send(request.head, body: request.body, excerptLimit: request.excerptLimit) { result in
            guard case .running = exchange.value else {
                connection.channel.close(promise: nil)
                return
            }
            switch result {
            case .success(let response):
                self.release(connection, keepAlive: response.head.isKeepAlive)
                self.finish(exchange, .success(response))
            case .failure(UploadClientError.connectionClosed(responseStarted: false)) where reused:
                // The remote closed the idle connection as it was taken: a new one gets the request.
                self.connectAndSend(exchange)
            case .failure(let error):
                connection.channel.close(promise: nil)
                self.finish(exchange, .failure(error))
            }
        }
    }

    /// Answers the caller once; the timeout is cancelled.
    private func finish(_ exchange: NIOLoopBoundBox<Exchange>, _ result: Result<UploadResponse, any Error>) {
        guard case .running(let running) = exchange.value else { return }
        exchange.value = .finished
        running.timeout?.cancel()
        running.continuation.resume(with: result)
    }

    /// Ends a request early (cancelled, timed out): the caller gets `error`, and a connection the request was
    /// using is closed, since its answer may still be under way.
    private func abandon(_ exchange: NIOLoopBoundBox<Exchange>, with error: any Error) {
        switch exchange.value {
        case .waiting:
            exchange.value = .cancelled
        case .running(let running):
            finish(exchange, .failure(error))
            if let connection = running.connection { connection.handler.value.abandon(with: error) }
        case .cancelled, .finished:
            break
        }
    }

    private func takeIdle() -> Connection? {
        while let connection = pool.value.idle.popLast() {
            if connection.channel.isActive { return connection }
        }
        return nil
    }

    private func release(_ connection: Connection, keepAlive: Bool) {
        guard keepAlive, connection.channel.isActive, !pool.value.isShutDown, !pool.value.isRetired else {
            connection.channel.close(promise: nil)
            return
        }
        pool.value.idle.append(connection)
    }

    private func connect(timeout: TimeAmount) -> EventLoopFuture<Connection> {
        let tls = self.tls
        let serverName = endpoint.serverName
        let pool = self.pool
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls {
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try pipeline.addHTTPClientHandlers()
                    // Reads alone tell an idle connection: every request is answered, and a write-watching
                    // handler would cost a promise per write.
                    try pipeline.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout))
                    try pipeline.addHandler(UploadConnectionHandler())
                    // A connection the remote closes while idle leaves the pool.
                    channel.closeFuture.whenComplete { _ in
                        pool.value.idle.removeAll { $0.channel === channel }
                    }
                }
            }
            .connect(host: endpoint.connectHost, port: endpoint.port)
            .flatMapThrowing { channel in
                let handler = try channel.pipeline.syncOperations.handler(type: UploadConnectionHandler.self)
                return Connection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
            }
    }
}
