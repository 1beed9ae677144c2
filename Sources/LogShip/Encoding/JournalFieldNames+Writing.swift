import LogShipRecord

extension JournalFieldNames {
    /// Writes the journal name of a sender's field `key` of `line`, as the spooled line holds it: byte by byte for a
    /// key of printable ASCII (nearly all), else as ``name(forField:)`` makes it from the text.
    static func writeName(
        forField key: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter
    ) {
        let bytes = line[key.range]
        guard !key.hasEscapes, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            let text = EscapedString(escaped: ArraySlice(bytes), hasEscapes: key.hasEscapes).string
            var name = self.name(forField: text)
            name.withUTF8 { writer.write($0) }
            return
        }
        let start = writer.count
        for byte in bytes {
            let mapped =
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - 0x20
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): byte
                default: UInt8(ascii: "_")
                }
            // Leading `_` dropped, as above.
            if writer.count == start, mapped == UInt8(ascii: "_") { continue }
            writer.write(mapped)
        }
        let made = writer.written(from: start)
        if made.isEmpty || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(made[0]) || reservedUTF8.contains(made)
            || made.starts(with: namespaceUTF8) || made.starts(with: fieldPrefixUTF8)
        {
            writer.move(from: start, by: fieldPrefixUTF8.utf8CodeUnitCount)
            fieldPrefixUTF8.utf8Bytes.enumerated().forEach { writer.patch($1, at: start + $0) }
        }
        if writer.count - start > maximumLength { writer.truncate(to: start + maximumLength) }
    }

    fileprivate static let reservedUTF8 = ByteNames(reserved)

    /// ``namespace`` and ``fieldPrefix``, for comparing bytes with.
    fileprivate static let namespaceUTF8: StaticString = "LOGSHIP_"
    fileprivate static let fieldPrefixUTF8: StaticString = "FIELD_"
}
