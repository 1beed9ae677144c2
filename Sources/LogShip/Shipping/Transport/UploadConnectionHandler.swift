import NIOCore
import NIOHTTP1

/// The end of an upload connection's pipeline: writes one request at a time and tells its ``UploadExchange`` what
/// the connection brings, part by part; the exchange's state machine makes sense of it.
final class UploadConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private var context: ChannelHandlerContext?
    /// The exchange whose request is on this connection, from ``write(_:for:)`` until it ends.
    private var exchange: UploadExchange?
    /// The first error the connection met: what a request failing with it was refused for (a TLS alert, a reset).
    private(set) var firstError: (any Error)?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Writes `request`, head and body in one flush, and reports its response to `exchange`.
    ///
    /// - Returns: `false` when the connection is closed, and nothing was written. A write that fails later closes
    ///   the channel, and ``channelInactive(context:)`` tells the exchange.
    func write(_ request: UploadRequest, for exchange: UploadExchange) -> Bool {
        guard let context, context.channel.isActive else { return false }
        self.exchange = exchange
        context.write(wrapOutboundOut(.head(request.head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(request.body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        return true
    }

    /// Stops telling the exchange, which has ended; the connection is idle, or closing.
    func detach() {
        exchange = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Read into a local: the exchange may end, and detach, while it is being told.
        guard let exchange else { return }
        switch unwrapInboundIn(data) {
        case .head(let head): exchange.receivedHead(head)
        case .body(let part): exchange.receivedBodyPart(part)
        case .end: exchange.receivedEnd()
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
        if firstError == nil { firstError = error }
        let exchange = self.exchange
        self.exchange = nil
        exchange?.errorCaught(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let exchange = self.exchange
        self.exchange = nil
        exchange?.connectionClosed(firstError: firstError)
        context.fireChannelInactive()
    }
}
