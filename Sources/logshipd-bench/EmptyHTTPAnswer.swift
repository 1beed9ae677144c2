import NIOCore
import NIOHTTP1

/// What the bench's receivers share: counting a body's lines as it streams, and answering with an empty body,
/// at once or after a delay, closing the connection when the request asked.

/// The lines of one body as its parts arrive: its newlines, and one more when the last line has none (syslog-ng's
/// bodies end without one).
struct LineTally {
    private var newlines = 0
    private var lastByte: UInt8?

    mutating func add(_ part: ByteBufferView) {
        newlines += part.withContiguousStorageIfAvailable { $0.count { $0 == UInt8(ascii: "\n") } }
            ?? part.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        lastByte = part.last ?? lastByte
    }

    var lines: Int { newlines + (lastByte.map { $0 != UInt8(ascii: "\n") ? 1 : 0 } ?? 0) }
}

/// Answers a request with `status` and no body, after `delay` if there is one, on the context's loop.
func answerEmpty(
    _ status: HTTPResponseStatus, keepAlive: Bool, after delay: TimeAmount, context: ChannelHandlerContext
) {
    guard delay > .zero else {
        writeEmptyAnswer(status, keepAlive: keepAlive, context: context)
        return
    }
    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
    context.eventLoop.scheduleTask(in: delay) { writeEmptyAnswer(status, keepAlive: keepAlive, context: bound.value) }
}

private func writeEmptyAnswer(_ status: HTTPResponseStatus, keepAlive: Bool, context: ChannelHandlerContext) {
    var head = HTTPResponseHead(version: .http1_1, status: status)
    head.headers.add(name: "Content-Length", value: "0")
    if !keepAlive { head.headers.add(name: "Connection", value: "close") }
    context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
    context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { [channel = context.channel] _ in
        if !keepAlive { channel.close(promise: nil) }
    }
}
