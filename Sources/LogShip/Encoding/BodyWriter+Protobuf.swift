#if canImport(Glibc)
import Glibc
#endif
import LogShipRecord
import NIOCore

/// The protobuf wire format, written by hand from the spooled line's parts: varints, fixed-width integers, and
/// length-delimited fields whose length is known before their contents (a string, a small message) or set once
/// they are written (``beginMessage(_:)``, ``endMessage(_:)``).
extension BodyWriter {
    /// The room a message's length is given before its contents are written: a varint of five bytes holds any
    /// 32-bit length.
    static let lengthRoom = 5

    @inline(__always)
    mutating func writeVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            write(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        write(UInt8(rest))
    }

    /// How many bytes `value` takes as a varint.
    @inline(__always)
    static func varintSize(_ value: UInt64) -> Int {
        (64 - value.leadingZeroBitCount + 6) / 7 + (value == 0 ? 1 : 0)
    }

    /// A varint field's key and value.
    @inline(__always)
    mutating func writeVarintField(_ field: UInt64, _ value: UInt64) {
        writeVarint(field << 3)
        writeVarint(value)
    }

    /// A fixed64 field's key and value.
    mutating func writeFixed64Field(_ field: UInt64, _ value: UInt64) {
        writeVarint(field << 3 | 1)
        skip(8)
        patch(value, at: count - 8)
    }

    /// A length-delimited field's key and length; its `length` bytes follow.
    @inline(__always)
    mutating func writeLengthDelimited(_ field: UInt64, length: Int) {
        writeVarint(field << 3 | 2)
        writeVarint(UInt64(length))
    }

    /// The size of a length-delimited field of a number below 16 whose contents are `length` bytes.
    @inline(__always)
    static func fieldSize(length: Int) -> Int {
        1 + varintSize(UInt64(length)) + length
    }

    /// A string field of a name logshipd writes.
    mutating func writeStringField(_ field: UInt64, _ text: StaticString) {
        writeLengthDelimited(field, length: text.utf8CodeUnitCount)
        write(text)
    }

    /// The length of `text` of `line` with its escapes undone.
    static func unescapedLength(_ text: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>) -> Int {
        guard text.hasEscapes else { return text.range.count }
        var length = 0
        var index = text.range.lowerBound
        while index < text.range.upperBound {
            // An escape is `\` and a letter, or `\u00XX`; each stands for one byte.
            if line[index] == UInt8(ascii: "\\") {
                index += line[index + 1] == UInt8(ascii: "u") ? 6 : 2
            } else {
                index += 1
            }
            length += 1
        }
        return length
    }

    /// Starts a message field whose length is known once its contents are written; returns where it starts, for
    /// ``endMessage(_:)``.
    mutating func beginMessage(_ field: UInt64) -> Int {
        writeVarint(field << 3 | 2)
        let start = count
        skip(Self.lengthRoom)
        return start
    }

    /// Ends the message begun at `start`: its length written in as few bytes as it takes, its contents moved to
    /// follow.
    mutating func endMessage(_ start: Int) {
        let length = count - start - Self.lengthRoom
        let lengthSize = Self.varintSize(UInt64(length))
        move(from: start + Self.lengthRoom, by: lengthSize - Self.lengthRoom)
        Self.storeVarint(UInt64(length), at: base + start)
    }

    /// Stores `value` as a varint at `address`; returns how many bytes it took.
    @discardableResult
    static func storeVarint(_ value: UInt64, at address: UnsafeMutablePointer<UInt8>) -> Int {
        var rest = value
        var offset = 0
        while rest >= 0x80 {
            address[offset] = UInt8(truncatingIfNeeded: rest) | 0x80
            rest >>= 7
            offset += 1
        }
        address[offset] = UInt8(rest)
        return offset + 1
    }
}

extension ByteBuffer {
    /// Starts a message field of a number below 16 whose length is known once its contents are written (a
    /// batch's group of records); returns where it starts, for ``endMessage(_:)``.
    mutating func beginMessage(_ field: UInt64) -> Int {
        writeInteger(UInt8(field << 3 | 2))
        let start = writerIndex
        writeRepeatingByte(0, count: BodyWriter.lengthRoom)
        return start
    }

    /// Ends the message begun at `start`: its length written in as few bytes as it takes, its contents moved to
    /// follow.
    mutating func endMessage(_ start: Int) {
        let length = writerIndex - start - BodyWriter.lengthRoom
        let lengthSize = BodyWriter.varintSize(UInt64(length))
        let offset = start - readerIndex
        withUnsafeMutableReadableBytes { bytes in
            let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            memmove(base + offset + lengthSize, base + offset + BodyWriter.lengthRoom, length)
            BodyWriter.storeVarint(UInt64(length), at: base + offset)
        }
        moveWriterIndex(to: start + lengthSize + length)
    }
}
