import LogShipRecord
import NIOCore

/// What the encoders write a request body with: parts of a ``RecordLine`` and numbers, straight into the buffer.
extension ByteBuffer {
    /// `string` as a JSON string: its escaped bytes are valid JSON string contents as they are.
    mutating func writeJSONString(_ string: EscapedString) {
        writeInteger(UInt8(ascii: "\""))
        writeBytes(string.escaped)
        writeInteger(UInt8(ascii: "\""))
    }

    /// `text`, which holds no control byte, as a JSON string: quotes and backslashes escaped, nothing else.
    mutating func writeJSONString(quoting text: ArraySlice<UInt8>) {
        writeInteger(UInt8(ascii: "\""))
        writeWithUnsafeMutableBytes(minimumWritableBytes: 2 * text.count) { output in
            text.withUnsafeBufferPointer { input in
                var count = 0
                for byte in input {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                        output[count] = UInt8(ascii: "\\")
                        count += 1
                    }
                    output[count] = byte
                    count += 1
                }
                return count
            }
        }
        writeInteger(UInt8(ascii: "\""))
    }

    /// `value` in decimal.
    mutating func writeDecimal(_ value: UInt64) {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        writeWithUnsafeMutableBytes(minimumWritableBytes: digits) { output in
            var rest = value
            for position in stride(from: digits - 1, through: 0, by: -1) {
                output[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return digits
        }
    }

    /// `value` in decimal, with a `-` when negative.
    mutating func writeDecimal(_ value: Int64) {
        if value < 0 { writeInteger(UInt8(ascii: "-")) }
        writeDecimal(value.magnitude)
    }
}
