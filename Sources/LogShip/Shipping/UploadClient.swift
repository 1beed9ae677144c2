import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// HTTP/1.1 POSTs to one endpoint over keep-alive connections, everything on one event loop: what carries batches
/// to the remote.
///
/// A request takes an idle connection or opens one, and gives it back when the response lets it stay open; the
/// shipper's cap on requests in flight is what bounds the connections. One timeout bounds the whole exchange,
/// connecting and the response body included. A request whose reused connection turns out to have been closed by
/// the remote before any answer (the remote ended an idle keep-alive connection just as it was taken) is sent once
/// more on a new connection; nothing else is retried here, since retries are the shipper's to decide.
///
/// It does only what the uploader needs, which is why it is not async-http-client: one hop to the loop per
/// request at most, no task group or dispatch timer per request, the head and body in one write.
final class UploadClient: Sendable {
    /// Connections idle for this long are closed.
    static let idleTimeout = TimeAmount.seconds(60)

    let eventLoop: any EventLoop
    private let endpoint: UploadEndpoint
    private let tls: NIOSSLContext?
    private let pool: NIOLoopBoundBox<Pool>

    private struct Pool {
        var idle: [any Channel] = []
        /// Replaced by a client for other settings: requests that started with this one still run, each on a
        /// connection closed after it.
        var isRetired = false
        var isShutDown = false
    }

    /// What one request has reached, touched only on the loop.
    private struct Progress {
        /// When the request times out.
        var deadline: NIODeadline
        var channel: (any Channel)?
        var timeout: Scheduled<Void>?
        var isFinished = false
    }

    /// - Throws: A TLS configuration NIOSSL cannot make a context of (the loader has checked the files).
    init(endpoint: UploadEndpoint, tls: TLSConfiguration?, eventLoop: any EventLoop) throws {
        self.endpoint = endpoint
        self.tls = endpoint.usesTLS ? try NIOSSLContext(configuration: tls ?? .makeClientConfiguration()) : nil
        self.eventLoop = eventLoop
        pool = .makeBoxSendingValue(Pool(), eventLoop: eventLoop)
    }

    /// Posts `body` with `head` (whose target, `Host` and `Content-Length` this sets) and returns the response, of
    /// whatever status.
    ///
    /// - Parameter excerptLimit: How much of the response body to keep; the rest is read and dropped.
    /// - Throws: ``UploadClientError``, `CancellationError` when the calling task is cancelled (the connection is
    ///   closed), or the connection's own error (refused, reset, TLS).
    func post(_ head: HTTPRequestHead, body: ByteBuffer, timeout: TimeAmount, excerptLimit: Int) async throws -> UploadResponse {
        var head = head
        head.uri = endpoint.target
        head.headers.replaceOrAdd(name: "Host", value: endpoint.hostHeader)
        head.headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
        let request = Request(head: head, body: body, excerptLimit: excerptLimit)
        let promise = eventLoop.makePromise(of: UploadResponse.self)
        let progress = NIOLoopBoundBox.makeBoxSendingValue(Progress(deadline: .now() + timeout), eventLoop: eventLoop)
        eventLoop.execute { self.start(request, progress, promise) }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            self.eventLoop.execute { self.abandon(progress, promise, with: CancellationError()) }
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
        for channel in idle { channel.close(promise: nil) }
    }

    private struct Request: Sendable {
        var head: HTTPRequestHead
        var body: ByteBuffer
        var excerptLimit: Int
    }

    // MARK: On the loop

    private func start(
        _ request: Request, _ progress: NIOLoopBoundBox<Progress>, _ promise: EventLoopPromise<UploadResponse>
    ) {
        guard !pool.value.isShutDown else {
            promise.fail(UploadClientError.shutDown)
            return
        }
        progress.value.timeout = eventLoop.scheduleTask(deadline: progress.value.deadline) {
            let status = progress.value.channel.flatMap { Self.handler(of: $0)?.responseStatus }
            self.abandon(progress, promise, with: UploadClientError.timedOut(status: status))
        }
        promise.futureResult.whenComplete { _ in
            progress.value.isFinished = true
            progress.value.timeout?.cancel()
        }
        if let channel = takeIdle() {
            send(request, on: channel, reused: true, progress, promise)
        } else {
            connectAndSend(request, progress, promise)
        }
    }

    private func connectAndSend(
        _ request: Request, _ progress: NIOLoopBoundBox<Progress>, _ promise: EventLoopPromise<UploadResponse>
    ) {
        connect(timeout: progress.value.deadline - .now()).whenComplete { result in
            switch result {
            case .success(let channel):
                guard !progress.value.isFinished else {
                    channel.close(promise: nil)
                    return
                }
                self.send(request, on: channel, reused: false, progress, promise)
            case .failure(let error):
                promise.fail(error)
            }
        }
    }

    private func send(
        _ request: Request, on channel: any Channel, reused: Bool, _ progress: NIOLoopBoundBox<Progress>,
        _ promise: EventLoopPromise<UploadResponse>
    ) {
        guard let handler = Self.handler(of: channel) else {
            channel.close(promise: nil)
            connectAndSend(request, progress, promise)
            return
        }
        progress.value.channel = channel
        let attempt = eventLoop.makePromise(of: UploadResponse.self)
        handler.send(request.head, body: request.body, excerptLimit: request.excerptLimit, promise: attempt)
        attempt.futureResult.whenComplete { result in
            guard !progress.value.isFinished else {
                channel.close(promise: nil)
                return
            }
            switch result {
            case .success(let response):
                self.release(channel, keepAlive: response.head.isKeepAlive)
                promise.succeed(response)
            case .failure(UploadClientError.connectionClosed(responseStarted: false)) where reused:
                // The remote closed the idle connection as it was taken: a new one gets the request.
                progress.value.channel = nil
                self.connectAndSend(request, progress, promise)
            case .failure(let error):
                channel.close(promise: nil)
                promise.fail(error)
            }
        }
    }

    private func abandon(
        _ progress: NIOLoopBoundBox<Progress>, _ promise: EventLoopPromise<UploadResponse>, with error: any Error
    ) {
        guard !progress.value.isFinished else { return }
        let channel = progress.value.channel
        promise.fail(error)
        if let channel { Self.handler(of: channel)?.abandon(with: error) ?? channel.close(promise: nil) }
    }

    private func takeIdle() -> (any Channel)? {
        while let channel = pool.value.idle.popLast() {
            if channel.isActive { return channel }
        }
        return nil
    }

    private func release(_ channel: any Channel, keepAlive: Bool) {
        guard keepAlive, channel.isActive, !pool.value.isShutDown, !pool.value.isRetired else {
            channel.close(promise: nil)
            return
        }
        pool.value.idle.append(channel)
    }

    private func connect(timeout: TimeAmount) -> EventLoopFuture<any Channel> {
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
                    try pipeline.addHandler(IdleStateHandler(allTimeout: Self.idleTimeout))
                    try pipeline.addHandler(UploadConnectionHandler())
                    // A connection the remote closes while idle leaves the pool.
                    channel.closeFuture.whenComplete { _ in
                        pool.value.idle.removeAll { $0 === channel }
                    }
                }
            }
            .connect(host: endpoint.connectHost, port: endpoint.port)
    }

    private static func handler(of channel: any Channel) -> UploadConnectionHandler? {
        try? channel.pipeline.syncOperations.handler(type: UploadConnectionHandler.self)
    }
}
