import NIOCore
import NIOHTTP1

/// What the bench's receivers share: counting a body's lines as it streams, and answering, at once or after a
/// delay, closing the connection when the request asked.

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

/// Answers a request with `status` and `body` (of `contentType`; none when empty), after `delay` if there is one,
/// on the context's loop.
func answer(
    _ status: HTTPResponseStatus, body: String = "", contentType: String = "application/json", keepAlive: Bool,
    after delay: TimeAmount, context: ChannelHandlerContext
) {
    guard delay > .zero else {
        writeAnswer(status, body: body, contentType: contentType, keepAlive: keepAlive, context: context)
        return
    }
    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
    context.eventLoop.scheduleTask(in: delay) {
        writeAnswer(status, body: body, contentType: contentType, keepAlive: keepAlive, context: bound.value)
    }
}

private func writeAnswer(
    _ status: HTTPResponseStatus, body: String, contentType: String, keepAlive: Bool, context: ChannelHandlerContext
) {
    var head = HTTPResponseHead(version: .http1_1, status: status)
    head.headers.add(name: "Content-Length", value: String(body.utf8.count))
    if !body.isEmpty { head.headers.add(name: "Content-Type", value: contentType) }
    if !keepAlive { head.headers.add(name: "Connection", value: "close") }
    context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
    if !body.isEmpty {
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
    }
    context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { [channel = context.channel] _ in
        if !keepAlive { channel.close(promise: nil) }
    }
}
