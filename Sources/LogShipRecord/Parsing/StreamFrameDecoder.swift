#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// Splits a stream into record frames: ended by a newline or a NUL byte, or RFC 6587 octet-counted (`LEN <PRI>…`).
///
/// A NUL ends a record as a newline does because common syslog clients (Python's `SysLogHandler` on a stream
/// socket) end each message with one and send no newline; a newline right after such a NUL belongs to it and makes
/// no empty record.
///
/// A frame never holds more than `maximumRecordBytes`: the rest of a longer record is skipped as it arrives,
/// without being buffered, and the frame is marked truncated. Octet counting is recognised per frame, only when
/// the count is followed by a space and a syslog `<PRI>`, so plain text that starts with a number stays text.
package struct StreamFrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = Frame

    private enum State {
        case framing
        /// A newline-delimited record was cut; skipping to its end.
        case skippingLine
        /// An octet-counted record was cut; skipping its remaining bytes.
        case skippingBytes(Int)
    }

    private let maximumRecordBytes: Int
    private var state = State.framing
    /// How far the current frame has been searched for its end, so slow writers cost no re-scans.
    private var scannedBytes = 0
    /// The last frame ended with a NUL: a newline that follows it at once is part of that ending.
    private var endedWithNUL = false

    /// Whether no record is cut short here: the next byte starts a frame, unless it is buffered already.
    package var isFraming: Bool {
        if case .framing = state { true } else { false }
    }

    package init(maximumRecordBytes: Int) {
        precondition(maximumRecordBytes > 0)
        self.maximumRecordBytes = maximumRecordBytes
    }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = nextFrame(&buffer, atEnd: false) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    package mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        guard let frame = nextFrame(&buffer, atEnd: true) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    /// Takes the next complete frame out of `buffer`, or `nil` when more bytes are needed.
    package mutating func nextFrame(_ buffer: inout ByteBuffer, atEnd: Bool) -> Frame? {
        while true {
            switch state {
            case .skippingLine:
                guard let offset = Self.recordEnd(in: buffer, from: 0) else {
                    buffer.moveReaderIndex(to: buffer.writerIndex)
                    return nil
                }
                endedWithNUL = buffer.getInteger(at: buffer.readerIndex + offset, as: UInt8.self) == 0
                buffer.moveReaderIndex(forwardBy: offset + 1)
                state = .framing
            case .skippingBytes(let remaining):
                let skipped = min(remaining, buffer.readableBytes)
                buffer.moveReaderIndex(forwardBy: skipped)
                guard skipped == remaining else {
                    state = .skippingBytes(remaining - skipped)
                    return nil
                }
                state = .framing
            case .framing:
                if endedWithNUL {
                    guard let next = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
                    if next == UInt8(ascii: "\n") { buffer.moveReaderIndex(forwardBy: 1) }
                    endedWithNUL = false
                    continue
                }
                switch octetCount(in: buffer, atEnd: atEnd) {
                case .undecided:
                    return nil
                case .counted(let length, let headerLength):
                    return octetCountedFrame(&buffer, length: length, headerLength: headerLength)
                case .notCounted:
                    return newlineFrame(&buffer, atEnd: atEnd)
                }
            }
        }
    }

    private enum OctetCount {
        case counted(length: Int, headerLength: Int)
        case notCounted
        case undecided
    }

    /// Whether the frame at the reader index starts with `LEN SP <`.
    private func octetCount(in buffer: ByteBuffer, atEnd: Bool) -> OctetCount {
        let view = buffer.readableBytesView
        var index = view.startIndex
        var length = 0
        while index < view.endIndex, let digit = view[index].asciiDigit {
            if index == view.startIndex && digit == 0 { return .notCounted }
            length = length * 10 + digit
            index += 1
            if index - view.startIndex > 9 { return .notCounted }
        }
        if index == view.startIndex { return .notCounted }
        guard index < view.endIndex else { return atEnd ? .notCounted : .undecided }
        guard view[index] == UInt8(ascii: " ") else { return .notCounted }
        index += 1
        guard index < view.endIndex else { return atEnd ? .notCounted : .undecided }
        guard view[index] == UInt8(ascii: "<"), length > 0 else { return .notCounted }
        return .counted(length: length, headerLength: index - view.startIndex)
    }

    private mutating func octetCountedFrame(_ buffer: inout ByteBuffer, length: Int, headerLength: Int) -> Frame? {
        let kept = min(length, maximumRecordBytes)
        guard buffer.readableBytes >= headerLength + kept else { return nil }
        buffer.moveReaderIndex(forwardBy: headerLength)
        let bytes = buffer.readBytes(length: kept)!
        if length > kept {
            state = .skippingBytes(length - kept)
        }
        return Frame(bytes: bytes, truncated: length > kept)
    }

    private mutating func newlineFrame(_ buffer: inout ByteBuffer, atEnd: Bool) -> Frame? {
        if let length = Self.recordEnd(in: buffer, from: scannedBytes) {
            scannedBytes = 0
            endedWithNUL = buffer.getInteger(at: buffer.readerIndex + length, as: UInt8.self) == 0
            let kept = min(length, maximumRecordBytes)
            let bytes = buffer.readBytes(length: kept)!
            buffer.moveReaderIndex(forwardBy: length - kept + 1)
            return Frame(bytes: bytes, truncated: length > kept)
        }
        let view = buffer.readableBytesView
        if view.count > maximumRecordBytes {
            scannedBytes = 0
            state = .skippingLine
            return Frame(bytes: buffer.readBytes(length: maximumRecordBytes)!, truncated: true)
        }
        if atEnd && view.count > 0 {
            scannedBytes = 0
            return Frame(bytes: buffer.readBytes(length: view.count)!, truncated: false)
        }
        scannedBytes = view.count
        return nil
    }

    /// Where the first newline or NUL is among the readable bytes of `buffer`, looking from `start` on: its
    /// offset from the reader index. Searched with `memchr`, which takes many bytes at a time.
    private static func recordEnd(in buffer: ByteBuffer, from start: Int) -> Int? {
        buffer.withUnsafeReadableBytes { bytes -> Int? in
            guard start < bytes.count, let base = bytes.baseAddress else { return nil }
            let from = base + start
            let newline = memchr(from, Int32(UInt8(ascii: "\n")), bytes.count - start)
            // A NUL ends a record only before the newline.
            let span = newline.map { UnsafeRawPointer($0) - UnsafeRawPointer(from) } ?? bytes.count - start
            let end = memchr(from, 0, span) ?? newline
            return end.map { start + (UnsafeRawPointer($0) - UnsafeRawPointer(from)) }
        }
    }
}

extension UInt8 {
    fileprivate var asciiDigit: Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) ? Int(self - UInt8(ascii: "0")) : nil
    }
}
