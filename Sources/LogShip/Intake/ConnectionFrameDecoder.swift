import NIOCore

/// A stream connection's framing (``StreamFrameDecoder``), which also keeps, for a stop, whether the connection
/// stands between two records: every byte read so far passed on in a frame, nothing of the next one read yet.
/// Only such a connection can be handed to the service manager's store without cutting a record in two.
struct ConnectionFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = Frame

    private var frames: StreamFrameDecoder
    /// Set after each read: whether the connection stands between two records.
    private let isBetweenRecords: NIOLoopBoundBox<Bool>

    init(maximumRecordBytes: Int, isBetweenRecords: NIOLoopBoundBox<Bool>) {
        frames = StreamFrameDecoder(maximumRecordBytes: maximumRecordBytes)
        self.isBetweenRecords = isBetweenRecords
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let frame = frames.nextFrame(&buffer, atEnd: false)
        // Kept after every frame too: NIO calls no decode again once the buffer is empty.
        isBetweenRecords.value = buffer.readableBytes == 0 && frames.isFraming
        guard let frame else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        guard let frame = frames.nextFrame(&buffer, atEnd: true) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }
}
