/// A string of a record's NDJSON line as the line holds it: the bytes between the quotes, still escaped.
///
/// A format that writes JSON copies these bytes as they are; one that needs the text itself (journal export, a
/// field name to compare) undoes the escapes. ``RecordLine`` has checked the bytes: valid UTF-8, no raw control
/// byte, and only the escapes the line's writer makes (`\"`, `\\`, `\n`, `\r`, `\t`, `\u00XX` for an ASCII byte),
/// besides JSON's `\/`, `\b` and `\f`, which each stand for one byte too.
package struct EscapedString: Hashable, Sendable {
    /// The bytes between the quotes, as the line has them: valid JSON string contents.
    package let escaped: ArraySlice<UInt8>
    /// Whether ``escaped`` holds an escape; without one, it is the text's own bytes.
    package let hasEscapes: Bool

    package init(escaped: ArraySlice<UInt8>, hasEscapes: Bool) {
        self.escaped = escaped
        self.hasEscapes = hasEscapes
    }

    /// A string that needs no escape, such as a name logshipd writes.
    package init(plain text: StaticString) {
        escaped = ArraySlice(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        hasEscapes = false
    }

    /// The text's own bytes.
    package var unescaped: [UInt8] {
        guard hasEscapes else { return Array(escaped) }
        var bytes: [UInt8] = []
        appendUnescaped(to: &bytes)
        return bytes
    }

    /// The text.
    package var string: String { String(decoding: unescaped, as: UTF8.self) }

    /// Whether the text is `text`, compared byte for byte.
    package func equals(_ text: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        return hasEscapes ? unescaped.elementsEqual(expected) : escaped.elementsEqual(expected)
    }

    /// Appends the text's own bytes to `bytes`.
    package func appendUnescaped(to bytes: inout [UInt8]) {
        guard hasEscapes else {
            bytes += escaped
            return
        }
        bytes.reserveCapacity(bytes.count + escaped.count)
        var index = escaped.startIndex
        while index < escaped.endIndex {
            let byte = escaped[index]
            index += 1
            guard byte == UInt8(ascii: "\\"), index < escaped.endIndex else {
                bytes.append(byte)
                continue
            }
            let letter = escaped[index]
            index += 1
            if letter == UInt8(ascii: "u"), index + 4 <= escaped.endIndex {
                // `\u00XX`: RecordLine has checked that the code is an ASCII byte.
                let code = (Self.hexValue(escaped[index + 2]) << 4) | Self.hexValue(escaped[index + 3])
                bytes.append(code)
                index += 4
            } else {
                bytes.append(Self.escapedByte(letter) ?? letter)
            }
        }
    }

    /// The byte a one-letter escape (`\n`, `\"`, …) stands for; `nil` for `u` and anything JSON does not know.
    package static func escapedByte(_ letter: UInt8) -> UInt8? {
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): letter
        case UInt8(ascii: "n"): UInt8(ascii: "\n")
        case UInt8(ascii: "r"): UInt8(ascii: "\r")
        case UInt8(ascii: "t"): UInt8(ascii: "\t")
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        default: nil
        }
    }

    /// The value of a hexadecimal digit; 0 for any other byte (the caller has checked).
    package static func hexValue(_ digit: UInt8) -> UInt8 {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: 0
        }
    }
}
