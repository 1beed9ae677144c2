import LogShipRecord

/// An OTLP `AnyValue` as the protobuf encoder writes one (a record's body, an attribute's value), and the
/// `KeyValue` of an attribute: sizes known before anything is written, so that no length is set afterwards.
enum OTLPAnyValue {
    /// `string_value = 1`, a name logshipd writes.
    case constant(StaticString)
    /// `string_value = 1`, a string of the spooled line, `length` bytes with its escapes undone.
    case string(RecordLine.Text, length: Int)
    /// `int_value = 3`.
    case integer(Int64)
    /// `bool_value = 2`.
    case bool(Bool)

    /// A string of `line`.
    static func text(_ text: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>) -> OTLPAnyValue {
        .string(text, length: BodyWriter.unescapedLength(text, of: line))
    }

    /// The length of a string value; 0 for others.
    var length: Int {
        switch self {
        case .constant(let text): text.utf8CodeUnitCount
        case .string(_, let length): length
        case .integer, .bool: 0
        }
    }

    /// The size of the `AnyValue`'s contents. A value is in a `oneof`, so it is written even when it is its
    /// type's default.
    var valueSize: Int {
        switch self {
        case .constant, .string: BodyWriter.fieldSize(length: length)
        case .integer(let value): 1 + BodyWriter.varintSize(UInt64(bitPattern: value))
        case .bool: 2
        }
    }

    /// The size of the contents of a `KeyValue` of `key` and this value.
    func keyValueSize(key: StaticString) -> Int {
        BodyWriter.fieldSize(length: key.utf8CodeUnitCount) + BodyWriter.fieldSize(length: valueSize)
    }

    /// A `KeyValue` of `key` and this value as field `field`, its contents `size` bytes (``keyValueSize(key:)``).
    func write(
        key: StaticString, size: Int, field: UInt64, of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter
    ) {
        writer.writeLengthDelimited(field, length: size)
        writer.writeStringField(1, key)
        writer.writeLengthDelimited(2, length: valueSize)
        writeValue(of: line, to: &writer)
    }

    /// The `AnyValue`'s contents.
    func writeValue(of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter) {
        switch self {
        case .constant(let text): writer.writeStringField(1, text)
        case .string(let text, let length):
            writer.writeLengthDelimited(1, length: length)
            _ = writer.writeUnescaped(text, of: line)
        case .integer(let value): writer.writeVarintField(3, UInt64(bitPattern: value))
        case .bool(let value): writer.writeVarintField(2, value ? 1 : 0)
        }
    }

    /// A string value's bytes alone, escapes undone (as an attribute's key).
    func writeText(of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter) {
        switch self {
        case .constant(let text): writer.write(text)
        case .string(let text, _): _ = writer.writeUnescaped(text, of: line)
        case .integer, .bool: break
        }
    }
}
