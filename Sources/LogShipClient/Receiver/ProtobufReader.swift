/// Reads the fields of one protobuf message in the wire format, for the receiver's OTLP decoding: each field's
/// number and value, a length-delimited value as the bytes it spans. Never traps on a damaged message.
struct ProtobufReader {
    /// A field's value as the wire carries it.
    enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes(ArraySlice<UInt8>)
    }

    /// A message that does not parse.
    struct Damaged: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "the protobuf message is damaged at byte \(offset)" }
    }

    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    /// The next field, or `nil` at the message's end.
    mutating func next() throws(Damaged) -> (field: UInt64, value: Value)? {
        guard index < bytes.endIndex else { return nil }
        let key = try varint()
        let value: Value
        switch key & 7 {
        case 0: value = .varint(try varint())
        case 1: value = .fixed64(try fixed(8))
        case 5: value = .fixed32(UInt32(try fixed(4)))
        case 2:
            let length = try varint()
            guard length <= UInt64(bytes.endIndex - index) else { throw Damaged(offset: index) }
            value = .bytes(bytes[index..<index + Int(length)])
            index += Int(length)
        default: throw Damaged(offset: index)
        }
        return (key >> 3, value)
    }

    private mutating func varint() throws(Damaged) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.endIndex, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        throw Damaged(offset: index)
    }

    /// A little-endian integer of `count` bytes.
    private mutating func fixed(_ count: Int) throws(Damaged) -> UInt64 {
        guard bytes.endIndex - index >= count else { throw Damaged(offset: index) }
        var value: UInt64 = 0
        for offset in (0..<count).reversed() { value = value << 8 | UInt64(bytes[index + offset]) }
        index += count
        return value
    }
}
