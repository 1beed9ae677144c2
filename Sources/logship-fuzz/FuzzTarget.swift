import Foundation
import LogShipRecord
import NIOCore

/// What must hold for any bytes a client can send, as records or as control requests
/// (``checkControlRequest(_:limit:)``), and for any journal entry (``checkJournalMapping(_:)``).
///
/// The first two input bytes choose the record size limit and how the stream is cut into reads; the rest is the
/// stream.
enum FuzzTarget {
    static func check(_ input: [UInt8]) {
        guard input.count >= 2 else { return }
        let maximum = 16 + Int(input[0]) * 4
        let stream = Array(input.dropFirst(2))
        let whole = frames(of: stream, cutEvery: nil, maximum: maximum)
        let cut = frames(of: stream, cutEvery: Int(input[1] % 17) + 1, maximum: maximum)

        // Framing does not depend on how the bytes were split into reads.
        precondition(whole == cut, "frames differ when the stream arrives in pieces")
        for frame in whole {
            precondition(frame.bytes.count <= maximum, "a frame is longer than the limit")
            checkParsing(frame)
            checkControlRequest(frame.bytes, limit: maximum)
        }
        checkParsing(Frame(bytes: stream, truncated: input[1] & 1 == 1))
        checkJournalMapping(input)
    }

    /// Parsing never fails, what it produces survives the trip through NDJSON unchanged, and the line written
    /// straight from the frame is the record's.
    static func checkParsing(_ frame: Frame) {
        let parser = RecordParser(hostname: "fuzz")
        let record = parser.parse(
            frame, source: .socket, peer: nil, receivedAt: Timestamp(microsecondsSinceEpoch: 1_795_255_200_000_000))
        let line = record.ndjsonLine
        precondition(!line.contains(UInt8(ascii: "\n")), "an NDJSON line holds a newline")
        guard let decoded = try? JSONDecoder().decode(LogRecord.self, from: Data(line)) else {
            preconditionFailure("the NDJSON line does not decode: \(String(decoding: line, as: UTF8.self))")
        }
        precondition(decoded == record, "the record changed on its way through NDJSON")
        let encoded = parser.encode(
            frame, source: .socket, peer: nil, receivedAt: Timestamp(microsecondsSinceEpoch: 1_795_255_200_000_000))
        precondition(
            encoded.line == line && encoded.priority == record.priority && encoded.truncated == frame.truncated,
            "the line written from the frame differs from the record's: "
                + "\(String(decoding: encoded.line, as: UTF8.self))")
    }

    static func frames(of stream: [UInt8], cutEvery step: Int?, maximum: Int) -> [Frame] {
        var decoder = StreamFrameDecoder(maximumRecordBytes: maximum)
        var buffer = ByteBuffer()
        var frames: [Frame] = []
        var offset = 0
        while offset < stream.count {
            let end = step.map { min(offset + $0, stream.count) } ?? stream.count
            buffer.writeBytes(stream[offset..<end])
            offset = end
            while let frame = decoder.nextFrame(&buffer, atEnd: false) { frames.append(frame) }
        }
        while let frame = decoder.nextFrame(&buffer, atEnd: true) { frames.append(frame) }
        return frames
    }
}
