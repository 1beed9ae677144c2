/// A record's NDJSON line (``LogRecord/ndjsonLine``), read in place: its parts where the line holds them, its
/// strings still escaped, so that a format can write them without decoding the record.
///
/// It reads the line's one shape: the keys in their fixed order, no whitespace, the escapes the line's writer makes.
/// Any other line, however well-formed as JSON, is refused with a ``RecordLineError`` rather than half read.
package struct RecordLine: Sendable {
    /// The sender's identity as the kernel gave it: the line's numbers as written, checked to be in range.
    package struct Peer: Sendable {
        /// Decimal, an `Int32`.
        package var pid: ArraySlice<UInt8>
        /// Decimal, a `UInt32`.
        package var uid: ArraySlice<UInt8>
        /// Decimal, a `UInt32`.
        package var gid: ArraySlice<UInt8>
        package var comm: EscapedString?
    }

    package var timestamp: Timestamp
    package var priority: PriorityClass
    package var severity: Severity
    package var host: EscapedString
    package var source: LogRecord.Source
    package var message: EscapedString
    package var peer: Peer?
    package var fields: Fields
    package var truncated: Bool

    /// Reads `line`, one NDJSON line without its newline.
    ///
    /// - Throws: ``RecordLineError`` naming the first byte that does not fit the line's shape.
    package init(_ line: ArraySlice<UInt8>) throws(RecordLineError) {
        var scanner = RecordLineScanner(line)
        self = try scanner.record()
    }

    init(
        timestamp: Timestamp, priority: PriorityClass, severity: Severity, host: EscapedString,
        source: LogRecord.Source, message: EscapedString, peer: Peer?, fields: Fields, truncated: Bool
    ) {
        self.timestamp = timestamp
        self.priority = priority
        self.severity = severity
        self.host = host
        self.source = source
        self.message = message
        self.peer = peer
        self.fields = fields
        self.truncated = truncated
    }
}

extension RecordLine {
    /// A line's `fields` object, checked when the line was read; its pairs in the line's order, which is key order.
    package struct Fields: Sequence, Sendable {
        /// The bytes between the braces; empty when the line has no fields.
        let contents: ArraySlice<UInt8>

        package var isEmpty: Bool { contents.isEmpty }

        /// The value of the field `key`.
        package subscript(key: StaticString) -> EscapedString? {
            first { $0.key.equals(key) }?.value
        }

        package func makeIterator() -> Iterator {
            Iterator(contents: contents, index: contents.startIndex)
        }

        package struct Iterator: IteratorProtocol {
            let contents: ArraySlice<UInt8>
            var index: Int

            package mutating func next() -> (key: EscapedString, value: EscapedString)? {
                // `"key":"value"` pairs apart by commas: a string is read to its closing quote, past escapes.
                guard index < contents.endIndex, let key = string() else { return nil }
                index += 1  // `:`
                guard let value = string() else { return nil }
                index += 1  // `,`, or past the end
                return (key, value)
            }

            private mutating func string() -> EscapedString? {
                guard index < contents.endIndex, contents[index] == UInt8(ascii: "\"") else { return nil }
                index += 1
                let start = index
                var hasEscapes = false
                while index < contents.endIndex, contents[index] != UInt8(ascii: "\"") {
                    if contents[index] == UInt8(ascii: "\\") {
                        hasEscapes = true
                        index += 1
                    }
                    index += 1
                }
                guard index < contents.endIndex else { return nil }
                defer { index += 1 }
                return EscapedString(escaped: contents[start..<index], hasEscapes: hasEscapes)
            }
        }
    }
}
