import NIOCore

/// Closes a request/response connection (the control socket) whose client, with every request answered, does not
/// complete its next request within `timeout`.
///
/// An idle client, or one that trickles a request a byte at a time, holds a place and a partial frame for at most
/// that long. A request being answered (`flush` may wait minutes) keeps its connection however long it takes; the
/// deadline starts again once the last response is written. Blank lines are not requests.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = FrameRead
    typealias InboundOut = FrameRead
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeout: TimeAmount
    /// Requests read and not yet answered: each gets exactly one response, in order.
    private var unanswered = 0
    private var deadline: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = .nanoseconds(Int64(timeout.seconds * 1e9))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let read = unwrapInboundIn(data)
        unanswered += read.frames.count
        if unanswered > 0 { disarm() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        unanswered = max(0, unanswered - 1)
        if unanswered == 0 { arm(context) }
    }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        let channel = context.channel
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            channel.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}
