extension StringProtocol {
    /// The text without the spaces and tabs around it: what `trimmingCharacters(in: .whitespaces)` gives, which
    /// FoundationEssentials does not have.
    package func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace && !$0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
