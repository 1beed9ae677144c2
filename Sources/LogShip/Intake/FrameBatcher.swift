import NIOCore

/// Frames a connection gave, handed on together, and how many blank frames were dropped among them.
struct FrameRead: Sendable {
    var frames: [Frame] = []
    /// Frames with nothing but whitespace (``Frame/isBlank``), dropped here and only counted.
    var blank = 0

    var isEmpty: Bool { frames.isEmpty && blank == 0 }
}

/// Passes on the frames decoded from one read cycle of a connection together, so that a client writing fast costs
/// one hop into the intake per read instead of one per record, and drops blank frames.
///
/// A read cycle is at most 256 KiB (``UnixStreamListener``'s channel options); one hand-over holds at most
/// ``maximumFrames`` frames of it, so that a read of tiny lines cannot become a hand-over of a hundred thousand
/// records. The async channel reads the socket no more while two hand-overs wait.
///
/// The size is a trade of memory for speed: every record of a hand-over, and of those waiting behind it, is held
/// until the spool has committed it. A cycle of ordinary lines (about 2 200 of 120 bytes) is three hand-overs
/// of at most 1 024; larger hand-overs were faster and held more (BENCHMARKS.md, Measured choices).
///
/// Frames decoded at end of input (a last line without a newline) arrive without a read completing, so they are
/// passed on when the input closes or the channel ends.
final class FrameBatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Frame
    typealias InboundOut = FrameRead

    static let maximumFrames = 1024

    private var pending = FrameRead()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.isBlank {
            pending.blank += 1
            return
        }
        pending.frames.append(frame)
        if pending.frames.count >= Self.maximumFrames {
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
