import NIOCore
import NIOHTTP1

/// The end of an upload connection's pipeline: sends one request at a time and completes it with the response.
///
/// Only the start of the response body is kept (the excerpt a refusal is reported with); the rest is read and
/// dropped, so the connection can carry the next request.
final class UploadConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    /// Told the response, or why there is none; called once per request.
    typealias Completion = (Result<UploadResponse, any Error>) -> Void

    private struct Exchange {
        var completion: Completion
        var excerptLimit: Int
        var head: HTTPResponseHead?
        var excerpt: [UInt8] = []
    }

    private var context: ChannelHandlerContext?
    private var exchange: Exchange?
    /// The first error the connection met: what a request failing with it was refused for (a TLS alert, a reset).
    private var failure: (any Error)?

    /// The status of the response under way, once its head has arrived.
    var responseStatus: Int? { exchange?.head.map { Int($0.status.code) } }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Writes a request; `completion` is told its response, or the failure when the connection ends first.
    ///
    /// A request that cannot be written met a connection the remote had closed: the channel closes on a failed
    /// write, and ``channelInactive(context:)`` fails the request.
    func send(_ head: HTTPRequestHead, body: ByteBuffer, excerptLimit: Int, completion: @escaping Completion) {
        guard let context, context.channel.isActive, exchange == nil else {
            completion(.failure(failure ?? UploadClientError.connectionClosed(responseStarted: false)))
            return
        }
        exchange = Exchange(completion: completion, excerptLimit: excerptLimit)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Fails the request under way with `error` and closes the connection (a timeout, a cancellation).
    func abandon(with error: any Error) {
        fail(error)
        context?.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            // An informational answer (1xx) is followed by the real one.
            guard head.status.code >= 200 else { return }
            exchange?.head = head
        case .body(let part):
            guard var current = exchange, current.excerpt.count < current.excerptLimit else { return }
            exchange = nil  // keeps the excerpt uniquely referenced while it grows
            current.excerpt += part.readableBytesView.prefix(current.excerptLimit - current.excerpt.count)
            exchange = current
        case .end:
            guard let finished = exchange, let head = finished.head else { return }
            exchange = nil
            finished.completion(.success(UploadResponse(head: head, excerpt: finished.excerpt)))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Idle for IdleStateHandler's time with no request under way: let the connection go.
        if event is IdleStateHandler.IdleStateEvent, exchange == nil {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if failure == nil { failure = error }
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(failure ?? UploadClientError.connectionClosed(responseStarted: exchange?.head != nil))
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error) {
        guard let failed = exchange else { return }
        exchange = nil
        failed.completion(.failure(error))
    }
}
