import NIOCore
import Testing

import LogShipTestKit
@testable import LogShipRecord

@Suite("Stream framing")
struct StreamFrameDecoderTests {
    /// Feeds `chunks` one after another, as separate reads, and collects the frames.
    func frames(_ chunks: [[UInt8]], maximum: Int = 64, atEnd: Bool = true) -> [Frame] {
        var decoder = StreamFrameDecoder(maximumRecordBytes: maximum)
        var buffer = ByteBuffer()
        var frames: [Frame] = []
        for chunk in chunks {
            buffer.writeBytes(chunk)
            while let frame = decoder.nextFrame(&buffer, atEnd: false) { frames.append(frame) }
        }
        if atEnd {
            while let frame = decoder.nextFrame(&buffer, atEnd: true) { frames.append(frame) }
        }
        return frames
    }

    func text(_ frames: [Frame]) -> [String] { frames.map { String(decoding: $0.bytes, as: UTF8.self) } }

    @Test("newline framing, with CRLF and a last line without newline")
    func newlines() {
        let result = frames([Array("a\nbb\r\nccc".utf8)])
        #expect(text(result) == ["a", "bb\r", "ccc"])
        #expect(result.allSatisfy { !$0.truncated })
    }

    @Test("a NUL ends a record as a newline does; a newline right after it makes no empty record, however split")
    func nulFraming() {
        let stream = Array("<11>e1\0<12>w2\0\n<14>i3\0\0tail\nlast".utf8)
        let expected = ["<11>e1", "<12>w2", "<14>i3", "", "tail", "last"]
        #expect(text(frames([stream])) == expected)
        #expect(text(frames(stream.map { [$0] })) == expected)
        for split in 1..<stream.count {
            #expect(text(frames([Array(stream[..<split]), Array(stream[split...])])) == expected, "split at \(split)")
        }
    }

    @Test("a line written one byte at a time")
    func byteAtATime() {
        let result = frames(Array("<3>slow\nnext\n".utf8).map { [$0] })
        #expect(text(result) == ["<3>slow", "next"])
    }

    @Test("RFC 6587 octet counting, also mixed with newline framing")
    func octetCounting() {
        let first = "<13>Nov 21 05:06:08 root: hello oc"
        let second = "<11>1 - - - - - - two\nlines"
        let stream = "\(first.utf8.count) \(first)\(second.utf8.count) \(second)plain\n"
        #expect(text(frames([Array(stream.utf8)])) == [first, second, "plain"])
        #expect(text(frames(Array(stream.utf8).map { [$0] })) == [first, second, "plain"])
    }

    @Test("text that starts with a number is not octet counted")
    func numberedText() {
        #expect(text(frames([Array("12 apples\n3\n".utf8)])) == ["12 apples", "3"])
    }

    @Test("a line over the limit is cut, marked, and the rest skipped without buffering it")
    func oversizedLine() {
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 1000)
        var decoder = StreamFrameDecoder(maximumRecordBytes: 64)
        var buffer = ByteBuffer()
        var result: [Frame] = []
        for chunk in stride(from: 0, to: long.count, by: 100) {
            buffer.writeBytes(long[chunk..<chunk + 100])
            while let frame = decoder.nextFrame(&buffer, atEnd: false) { result.append(frame) }
            #expect(buffer.readableBytes <= 164)
        }
        buffer.writeBytes(Array("\nafter\n".utf8))
        while let frame = decoder.nextFrame(&buffer, atEnd: false) { result.append(frame) }
        #expect(result.count == 2)
        #expect(result[0].bytes.count == 64 && result[0].truncated)
        #expect(String(decoding: result[1].bytes, as: UTF8.self) == "after" && !result[1].truncated)
    }

    @Test("an octet-counted record over the limit is cut and its remaining bytes skipped")
    func oversizedOctetCount() {
        let body = "<13>" + String(repeating: "y", count: 200)
        let result = frames([Array("\(body.utf8.count) \(body)5 <1>ok".utf8)])
        #expect(result.count == 2)
        #expect(result[0].truncated && result[0].bytes.count == 64)
        #expect(String(decoding: result[1].bytes, as: UTF8.self) == "<1>ok")
    }
}
