/// Where the parts of a record's NDJSON line (``LogRecord/ndjsonLine``) lie in it: its strings still escaped, so
/// that a format can write them without decoding the record.
///
/// It holds offsets, not the bytes: reading a batch and writing its body take no reference count per part. A
/// format reads a part from the line it was read from (``Text/escaped(in:)``, or its bytes in place).
///
/// It reads the line's one shape: the keys in their fixed order, no whitespace, the escapes the line's writer makes.
/// Any other line, however well-formed as JSON, is refused with a ``RecordLineError`` rather than half read.
package struct RecordLine: Sendable {
    /// A string of the line: the bytes between its quotes, as offsets from the line's first byte.
    package struct Text: Hashable, Sendable {
        package var range: Range<Int>
        /// Whether the bytes hold an escape; without one, they are the text's own bytes.
        package var hasEscapes: Bool

        /// The string as ``EscapedString``, from `line`, the line it was read from.
        package func escaped(in line: ArraySlice<UInt8>) -> EscapedString {
            EscapedString(
                escaped: line[line.startIndex + range.lowerBound..<line.startIndex + range.upperBound],
                hasEscapes: hasEscapes)
        }
    }

    /// The sender's identity as the kernel gave it: the line's numbers as written (decimal digits, checked to be
    /// an `Int32` and two `UInt32`s), as offsets.
    package struct Peer: Sendable {
        package var pid: Range<Int>
        package var uid: Range<Int>
        package var gid: Range<Int>
        package var comm: Text?
    }

    /// A field of the line: its key and value.
    package struct Field: Sendable {
        package var key: Text
        package var value: Text
    }

    package var timestamp: Timestamp
    package var priority: PriorityClass
    package var severity: Severity
    package var host: Text
    package var source: LogRecord.Source
    package var message: Text
    package var peer: Peer?
    /// The bytes between the `fields` object's braces; empty when the line has no fields.
    package var fields: Range<Int>
    /// How many fields the line has.
    package var fieldCount: Int
    /// The field named `systemd_unit`, if the line has one.
    package var systemdUnitField: Field?
    package var truncated: Bool

    /// The unit journald vouches for: the `systemd_unit` field of a journal record, read from `_SYSTEMD_UNIT`.
    ///
    /// On a record from a socket `systemd_unit` is only the sender's word, an ordinary field that no format may
    /// show as the record's unit (OTLP `systemd.unit` or `service.name`, journal `_SYSTEMD_UNIT`, Loki `unit`).
    package var vouchedUnit: Text? {
        source == .journal ? systemdUnitField?.value : nil
    }

    /// The fields of `line`, the line this was read from, in key order.
    package func fields(in line: UnsafeBufferPointer<UInt8>) -> FieldSequence {
        FieldSequence(bytes: line, contents: fields, skipping: nil)
    }

    /// The fields a format writes as fields, in key order: all of them but the vouched unit, which each format
    /// writes under its own name for the unit.
    package func fieldsBesideVouchedUnit(in line: UnsafeBufferPointer<UInt8>) -> FieldSequence {
        FieldSequence(bytes: line, contents: fields, skipping: source == .journal ? systemdUnitField?.key.range : nil)
    }
}

extension RecordLine {
    /// Reads `line`, one NDJSON line without its newline.
    ///
    /// - Throws: ``RecordLineError`` naming the first byte that does not fit the line's shape.
    package init(_ line: ArraySlice<UInt8>) throws(RecordLineError) {
        self = try line.withUnsafeBufferPointer { bytes throws(RecordLineError) in try Self(bytes) }
    }

    /// Reads `line`, one NDJSON line without its newline, in place.
    ///
    /// - Throws: ``RecordLineError`` naming the first byte that does not fit the line's shape.
    package init(_ line: UnsafeBufferPointer<UInt8>) throws(RecordLineError) {
        var scanner = RecordLineScanner(line)
        self = try scanner.record()
    }
}

extension RecordLine {
    /// A line's fields, checked when the line was read: its `"key":"value"` pairs in the line's order, which is
    /// key order.
    package struct FieldSequence: Sequence, IteratorProtocol {
        fileprivate let bytes: UnsafeBufferPointer<UInt8>
        fileprivate let contents: Range<Int>
        /// The key of a field left out.
        fileprivate let skipping: Range<Int>?
        private var index: Int

        fileprivate init(bytes: UnsafeBufferPointer<UInt8>, contents: Range<Int>, skipping: Range<Int>?) {
            self.bytes = bytes
            self.contents = contents
            self.skipping = skipping
            index = contents.lowerBound
        }

        package mutating func next() -> Field? {
            while index < contents.upperBound {
                // Pairs apart by commas: a string is read to its closing quote, past escapes.
                let key = string()
                index += 1  // `:`
                let value = string()
                index += 1  // `,`, or past the end
                if key.range != skipping { return Field(key: key, value: value) }
            }
            return nil
        }

        private mutating func string() -> Text {
            index += 1  // `"`
            let start = index
            var hasEscapes = false
            while bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\") {
                    hasEscapes = true
                    index += 1
                }
                index += 1
            }
            defer { index += 1 }
            return Text(range: start..<index, hasEscapes: hasEscapes)
        }
    }
}
