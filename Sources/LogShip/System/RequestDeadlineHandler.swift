import NIOCore

/// Closes a request/response connection (the control socket, the metrics endpoint) whose client keeps a place
/// without using it: one that, with every request answered, does not complete its next request within `timeout`,
/// or one that stops reading its answers for that long.
///
/// An idle client, or one that trickles a request a byte at a time, holds a place for at most `timeout`; so does
/// one that sends requests and never reads the responses (its connection stops being writable). A request being
/// answered (`flush` may wait minutes) keeps its connection however long it takes; the deadline starts again once
/// the last response is written.
final class RequestDeadlineHandler<Request, Response>: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Request
    typealias InboundOut = Request
    typealias OutboundIn = Response
    typealias OutboundOut = Response

    private let timeout: TimeAmount
    /// How many requests a message read completes (blank lines, parts of a request: none).
    private let requests: (Request) -> Int
    /// How many responses a message written completes.
    private let responses: (Response) -> Int
    /// Requests read and not yet answered: each gets exactly one response, in order.
    private var unanswered = 0
    private var deadline: Scheduled<Void>?

    init(timeout: Duration, requests: @escaping (Request) -> Int, responses: @escaping (Response) -> Int) {
        self.timeout = TimeAmount(timeout)
        self.requests = requests
        self.responses = responses
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
        unanswered += requests(unwrapInboundIn(data))
        if unanswered > 0 && context.channel.isWritable { disarm() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let answered = responses(unwrapOutboundIn(data))
        context.write(data, promise: promise)
        unanswered = max(0, unanswered - answered)
        if unanswered == 0 { arm(context) }
    }

    /// A client that does not read its answers stops the server's writes: it gets the same deadline as one
    /// that sends nothing.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable {
            arm(context)
        } else if unanswered > 0 {
            disarm()
        }
        context.fireChannelWritabilityChanged()
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

extension RequestDeadlineHandler where Request == FrameRead, Response == ByteBuffer {
    /// For the control socket: a request is a line (blank lines are none), a response a line written whole.
    convenience init(controlTimeout timeout: Duration) {
        self.init(timeout: timeout, requests: { $0.frames.count }, responses: { _ in 1 })
    }
}
