import NIOCore

/// Frames a connection gave, handed on together, and how many blank frames were dropped among them.
struct FrameRead: Sendable {
    var frames: [Frame] = []
    /// Frames with nothing but whitespace (``Frame/isBlank``), dropped here and only counted.
    var blank = 0
    /// The bytes of `frames`.
    var bytes = 0

    var isEmpty: Bool { frames.isEmpty && blank == 0 }
}

/// Passes on the frames decoded from one read of a connection together, so that a client writing fast costs one
/// hop into the intake per read instead of one per record, and drops blank frames.
///
/// One hand-over holds at most ``maximumFrames`` frames, and is handed on once it holds ``maximumBytes`` bytes or
/// more (a frame is at most `ingest.max_record_bytes`). The async channel reads the socket no more while two
/// hand-overs wait; one read cycle (NIO reads up to four times 64 KiB) may leave more waiting, so a connection
/// holds at most about 256 KiB of frames beyond what its handler works on.
/// Frames decoded at end of input (a last line without a newline) arrive without a read completing, so they are
/// passed on when the input closes or the channel ends.
final class FrameBatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = FrameRead

    static let maximumFrames = 512
    static let maximumBytes = 256 << 10

    private var pending = FrameRead()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.isBlank {
            pending.blank += 1
            return
        }
        pending.frames.append(frame)
        pending.bytes += frame.bytes.count
        if pending.frames.count >= Self.maximumFrames || pending.bytes >= Self.maximumBytes {
            flush(context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush(context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        flush(context)
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        flush(context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        flush(context)
        context.fireErrorCaught(error)
    }

    private func flush(_ context: ChannelHandlerContext) {
        guard !pending.isEmpty else { return }
        let read = pending
        pending = FrameRead()
        context.fireChannelRead(wrapInboundOut(read))
    }
}
