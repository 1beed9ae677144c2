/// Text from elsewhere (a record, a remote's answer) made safe to print on a terminal.
public enum TerminalText {
    /// `text` with every control character written as an escape (`\n`, `\t`, `\u{1B}` as `\e`, others as
    /// `\xHH` or `\u{HHHH}`) and a backslash doubled, so that a record or a remote's answer cannot move the cursor,
    /// recolour, retitle or clear the terminal it is printed on, nor pass for another line.
    public static func escaped(_ text: some StringProtocol) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: escaped += "\\\\"
            case 0x0A: escaped += "\\n"
            case 0x0D: escaped += "\\r"
            case 0x09: escaped += "\\t"
            case 0x1B: escaped += "\\e"
            case 0x00..<0x20, 0x7F: escaped += "\\x" + hex(scalar.value, digits: 2)
            // C1 controls, and the marks that reorder or hide text around them.
            case 0x80..<0xA0, 0x200B...0x200F, 0x202A...0x202E, 0x2066...0x2069:
                escaped += "\\u{" + hex(scalar.value, digits: 4) + "}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
