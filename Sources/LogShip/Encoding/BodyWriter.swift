#if canImport(Glibc)
import Glibc
#endif
import LogShipRecord
import NIOCore

/// Writes one record's part of a request body into memory the encoder reserved for it: a byte is a store, a
/// string of the spooled line one copy.
///
/// - Important: The memory must hold what is written; each encoder reserves a bound it derives from the line's
///   length and its number of fields (``ByteBuffer/write(reserving:_:)``).
struct BodyWriter {
    /// The reserved memory's first byte; the protobuf writing sets a length in place there.
    let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// Bytes written so far.
    private(set) var count = 0

    init(_ buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        capacity = buffer.count
    }

    @inline(__always)
    mutating func write(_ byte: UInt8) {
        assert(count < capacity, "the body outgrew the room reserved for it")
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func write(_ text: StaticString) {
        write(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        assert(count + bytes.count <= capacity, "the body outgrew the room reserved for it")
        if bytes.count <= 64 {
            // Most parts are names and short strings: copied a word at a time, not through a call to memmove.
            let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(base + count)
            var offset = 0
            while offset + 8 <= bytes.count {
                to.storeBytes(
                    of: from.loadUnaligned(fromByteOffset: offset, as: UInt64.self), toByteOffset: offset,
                    as: UInt64.self)
                offset += 8
            }
            while offset < bytes.count {
                to.storeBytes(
                    of: from.load(fromByteOffset: offset, as: UInt8.self), toByteOffset: offset, as: UInt8.self)
                offset += 1
            }
        } else {
            (base + count).update(from: source, count: bytes.count)
        }
        count += bytes.count
    }

    mutating func write(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) {
        write(UnsafeBufferPointer(rebasing: bytes))
    }

    /// `value` in decimal: its digits made from the last, into the room after what is written, then moved to
    /// the front of it.
    mutating func writeDecimal(_ value: UInt64) {
        assert(count + 40 <= capacity, "the body outgrew the room reserved for it")
        let end = base + count + 40
        var start = end
        var rest = value
        repeat {
            start -= 1
            start.pointee = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        } while rest > 0
        let digits = end - start
        (base + count).update(from: start, count: digits)
        count += digits
    }

    /// `value` in decimal, with a `-` when negative.
    mutating func writeDecimal(_ value: Int64) {
        if value < 0 { write(UInt8(ascii: "-")) }
        writeDecimal(value.magnitude)
    }

    /// `text` of `line` as a JSON string: its escaped bytes are valid JSON string contents as they are.
    @inline(__always)
    mutating func writeJSONString(_ text: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>) {
        write(UInt8(ascii: "\""))
        write(line[text.range])
        write(UInt8(ascii: "\""))
    }

    /// `text`, which holds no control byte, as a JSON string: quotes and backslashes escaped, nothing else. Runs
    /// without either are copied whole, found eight bytes at a time.
    mutating func writeJSONString(quoting text: UnsafeBufferPointer<UInt8>) {
        write(UInt8(ascii: "\""))
        guard let start = text.baseAddress else {
            write(UInt8(ascii: "\""))
            return
        }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var copied = 0
        var offset = 0
        while offset < text.count {
            if offset + 8 <= text.count {
                let word = UnsafeRawPointer(start + offset).loadUnaligned(as: UInt64.self)
                let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
                let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
                let found = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash) & highs
                guard found != 0 else {
                    offset += 8
                    continue
                }
                // The lowest flagged byte is a quote or backslash (a false flag only follows a true one).
                offset += found.trailingZeroBitCount / 8
            } else if start[offset] != UInt8(ascii: "\""), start[offset] != UInt8(ascii: "\\") {
                offset += 1
                continue
            }
            write(UnsafeBufferPointer(start: start + copied, count: offset - copied))
            write(UInt8(ascii: "\\"))
            copied = offset
            offset += 1
        }
        write(UnsafeBufferPointer(start: start + copied, count: text.count - copied))
        write(UInt8(ascii: "\""))
    }

    /// `text` of `line` with its escapes undone; returns whether it holds a control byte other than a tab.
    mutating func writeUnescaped(_ text: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.hasEscapes else {
            // Without escapes a spooled string has no control byte.
            write(line[text.range])
            return false
        }
        var hasControlBytes = false
        var index = text.range.lowerBound
        while index < text.range.upperBound {
            var byte = line[index]
            index += 1
            if byte == UInt8(ascii: "\\") {
                let letter = line[index]
                index += 1
                if letter == UInt8(ascii: "u") {
                    // `\u00XX`: RecordLine has checked that the code is an ASCII byte.
                    byte = (EscapedString.hexValue(line[index + 2]) << 4) | EscapedString.hexValue(line[index + 3])
                    index += 4
                } else {
                    byte = EscapedString.escapedByte(letter) ?? letter
                }
                hasControlBytes = hasControlBytes || (byte < 0x20 && byte != 0x09)
            }
            write(byte)
        }
        return hasControlBytes
    }

    /// Leaves `count` bytes to be written later with ``patch(_:at:)``.
    mutating func skip(_ count: Int) {
        assert(self.count + count <= capacity, "the body outgrew the room reserved for it")
        self.count += count
    }

    /// Writes `value` as 64-bit little endian at `offset`, over bytes written or skipped before.
    mutating func patch(_ value: UInt64, at offset: Int) {
        UnsafeMutableRawPointer(base + offset).storeBytes(of: value.littleEndian, toByteOffset: 0, as: UInt64.self)
    }

    /// Writes `byte` at `offset`, over a byte written or skipped before.
    mutating func patch(_ byte: UInt8, at offset: Int) {
        base[offset] = byte
    }

    /// Moves the bytes written from `offset` on by `distance` (back when negative).
    mutating func move(from offset: Int, by distance: Int) {
        assert(count + distance <= capacity, "the body outgrew the room reserved for it")
        memmove(base + offset + distance, base + offset, count - offset)
        count += distance
    }

    /// Forgets the bytes written from `count` on.
    mutating func truncate(to count: Int) {
        self.count = min(self.count, count)
    }

    /// The bytes written from `offset` on.
    func written(from offset: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: base + offset, count: count - offset)
    }
}

extension ByteBuffer {
    /// A request body's buffer: room for the `expected` bytes of a batch and for the largest reserve of one of its
    /// records, so that the last record's reserve does not grow it.
    ///
    /// - Important: Keep `expected` near what is written: glibc maps a block of 256 KiB or more apart
    ///   (``MallocTuning``), and each request then faults its pages in anew.
    static func body(expected: Int, largestReserve: Int) -> ByteBuffer {
        ByteBufferAllocator().buffer(capacity: expected + largestReserve)
    }

    /// Writes with `body` into at least `capacity` bytes of raw memory at the buffer's end, growing it first if
    /// it has less room.
    mutating func write(reserving capacity: Int, _ body: (inout BodyWriter) -> Void) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { memory in
            var writer = BodyWriter(memory)
            body(&writer)
            return writer.count
        }
    }
}
