import LogShipRecord

/// The field names of the journal export format: those logshipd writes, and the one a sender's field gets.
///
/// A journal name is upper case letters, digits and `_`, at most 64 bytes, not starting with a digit; one that
/// starts with `_` is journald's own, vouched for by the host, and only logshipd writes such names. A sender's key
/// is made a name (`syslog_identifier` as `SYSLOG_IDENTIFIER`, `exampleSDID@32473.iut` as `EXAMPLESDID_32473_IUT`,
/// leading `_` dropped). What the host vouches for always wins: a name logshipd writes, with or without journald's
/// leading `_` (`MESSAGE`, `PRIORITY`, `PID` for `_PID`), one in logshipd's `LOGSHIP_` namespace, or one starting
/// with the prefix itself becomes `FIELD_<NAME>`; so does a name that would be empty or start with a digit.
enum JournalFieldNames {
    /// The names logshipd writes from a record's own parts, besides those in ``namespace``.
    static let written: Set<String> = [
        "__REALTIME_TIMESTAMP", "MESSAGE", "PRIORITY", "_HOSTNAME", "_PID", "_UID", "_GID", "_COMM", "_SYSTEMD_UNIT",
    ]

    /// logshipd's own namespace (`LOGSHIP_PRIORITY_CLASS`, `LOGSHIP_SOURCE`, `LOGSHIP_TRUNCATED`).
    static let namespace = "LOGSHIP_"

    /// The prefix of a sender's field that would otherwise take a reserved name.
    static let fieldPrefix = "FIELD_"

    /// The longest name journald accepts.
    static let maximumLength = 64

    /// ``written`` as a sender's key would come out: without journald's leading `_`.
    private static let reserved = Set(written.map { String($0.drop { $0 == "_" }) })

    /// The journal name of a sender's field `key`.
    static func name(forField key: String) -> String {
        var name = String(key.uppercased().map { ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? $0 : "_" })
        name = String(name.drop { $0 == "_" })
        if name.isEmpty || name.first!.isNumber || reserved.contains(name) || name.hasPrefix(namespace)
            || name.hasPrefix(fieldPrefix)
        {
            name = fieldPrefix + name
        }
        return String(name.prefix(maximumLength))
    }

    /// Writes the journal name of a sender's field `key` of `line`, as the spooled line holds it: byte by byte for a
    /// key of printable ASCII (nearly all), else as ``name(forField:)`` makes it from the text.
    static func writeName(forField key: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>, to writer: inout BodyWriter) {
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

    private static let reservedUTF8 = ByteNames(reserved)

    /// ``namespace`` and ``fieldPrefix``, for comparing bytes with.
    private static let namespaceUTF8: StaticString = "LOGSHIP_"
    private static let fieldPrefixUTF8: StaticString = "FIELD_"

    /// The field key a name that is not one of logshipd's own stands for, in the socket inputs' lower case style:
    /// `REQUEST_ID` as `request_id`, `FIELD_PRIORITY` as `priority`. Case and punctuation do not come back.
    static func field(forName name: String) -> String {
        (name.hasPrefix(fieldPrefix) ? String(name.dropFirst(fieldPrefix.count)) : name).lowercased()
    }
}
