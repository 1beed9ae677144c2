/// The members of a JSON object, found without decoding them: each key's and value's bytes, in order.
///
/// Foundation's decoder builds every member of an object before anything can look at them, so a line of tens of
/// thousands of fields costs many times its size. This scan lets ``JSONLineParser`` count the fields first and
/// decode only those a record keeps. It checks the object's shape (strings, brackets, separators), not what the
/// values hold: what it passes on to be kept is decoded, and fails there if it is not JSON.
struct JSONObjectMembers {
    /// One member: its key with the quotes, and its value.
    struct Member {
        var key: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>

        /// The member as it was written, `"key":value`.
        var text: [UInt8] {
            var text = Array(key)
            text.append(UInt8(ascii: ":"))
            text += value
            return text
        }
    }

    private let bytes: ArraySlice<UInt8>

    /// - Parameter bytes: An object, with whitespace around it or not.
    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    /// Calls `body` with each member in order, until it returns false.
    ///
    /// - Returns: False when the bytes are not an object; a scan that `body` stopped returns true.
    func forEach(_ body: (Member) -> Bool) -> Bool {
        var index = skipWhitespace(from: bytes.startIndex)
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "{") else { return false }
        index = skipWhitespace(from: index + 1)
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "}") {
            return skipWhitespace(from: index + 1) == bytes.endIndex
        }
        while true {
            guard let keyEnd = stringEnd(from: index) else { return false }
            let key = bytes[index..<keyEnd]
            index = skipWhitespace(from: keyEnd)
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: ":") else { return false }
            index = skipWhitespace(from: index + 1)
            guard let valueEnd = valueEnd(from: index) else { return false }
            guard body(Member(key: key, value: bytes[index..<valueEnd])) else { return true }
            index = skipWhitespace(from: valueEnd)
            guard index < bytes.endIndex else { return false }
            switch bytes[index] {
            case UInt8(ascii: ","): index = skipWhitespace(from: index + 1)
            case UInt8(ascii: "}"): return skipWhitespace(from: index + 1) == bytes.endIndex
            default: return false
            }
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func skipWhitespace(from start: Int) -> Int {
        var index = start
        while index < bytes.endIndex, Self.isWhitespace(bytes[index]) { index += 1 }
        return index
    }

    /// The index after the string that starts at `start`, or `nil` when none starts there or it does not end.
    private func stringEnd(from start: Int) -> Int? {
        guard start < bytes.endIndex, bytes[start] == UInt8(ascii: "\"") else { return nil }
        var index = start + 1
        while index < bytes.endIndex {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    /// The index after the value that starts at `start`: a string, an object or an array to its closing bracket,
    /// or a number or literal up to the next separator.
    private func valueEnd(from start: Int) -> Int? {
        guard start < bytes.endIndex else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return stringEnd(from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < bytes.endIndex {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(from: index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return nil
        default:
            var index = start
            while index < bytes.endIndex, !Self.isWhitespace(bytes[index]),
                ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]")].contains(bytes[index])
            {
                index += 1
            }
            return index > start ? index : nil
        }
    }
}
