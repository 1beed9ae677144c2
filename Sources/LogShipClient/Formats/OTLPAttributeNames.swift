import LogShipRecord

/// The attribute names of OTLP log records: those logshipd sets, and the one a sender's field gets.
///
/// What the host vouches for always wins. A field whose key is a name logshipd sets (on a log record or on its
/// resource) or lies in logshipd's own `logship.` namespace becomes the attribute `logship.field.<key>`, so that a
/// field `process.pid` or `service.name` cannot pose as the sender's pid or service; any other key is the
/// attribute's name as it is. The names are reserved whether or not a record carries the attribute (a record
/// without credentials has no `process.pid`, and a sender's field still may not take the name).
package enum OTLPAttributeNames {
    /// Attributes logshipd sets on a log record, from the record's own parts.
    package static let record: Set<String> = [
        "logship.source", "logship.priority", "logship.truncated", "syslog.severity",
        "process.pid", "user.id", "group.id", "process.executable.name", "systemd.unit",
    ]

    /// Attributes of the resource a record is grouped under.
    package static let resource: Set<String> = ["host.name", "service.name"]

    /// logshipd's own namespace: a name in it is logshipd's word, never a sender's.
    package static let namespace = "logship."

    /// The prefix of a sender's field that would otherwise take a reserved name; in ``namespace``, so that
    /// renaming never meets another field's name.
    package static let fieldPrefix: StaticString = "logship.field."

    /// The attribute name of a sender's field `key`.
    package static func attribute(forField key: String) -> String {
        isReserved(key) ? "\(fieldPrefix)\(key)" : key
    }

    /// The field key an attribute that is not one of ``record`` stands for: the sender's own key again.
    package static func field(forAttribute name: String) -> String {
        name.hasPrefix(fieldPrefix.description) ? String(name.dropFirst(fieldPrefix.utf8CodeUnitCount)) : name
    }

    /// Whether a sender's field `key` of `line`, as the spooled line holds it, takes a reserved name.
    package static func isReserved(_ key: RecordLine.Text, of line: UnsafeBufferPointer<UInt8>) -> Bool {
        // The reserved names need no escape: a key with one is compared by its bytes with the escapes undone.
        guard !key.hasEscapes else {
            return EscapedString(escaped: ArraySlice(line[key.range]), hasEscapes: true).unescaped
                .withUnsafeBufferPointer { isReserved(utf8: $0) }
        }
        return isReserved(utf8: UnsafeBufferPointer(rebasing: line[key.range]))
    }

    private static func isReserved(utf8 name: UnsafeBufferPointer<UInt8>) -> Bool {
        name.starts(with: namespaceUTF8) || reservedUTF8.contains(name)
    }

    private static func isReserved(_ name: String) -> Bool {
        record.contains(name) || resource.contains(name) || name.hasPrefix(namespace)
    }

    /// ``namespace``, for comparing bytes with.
    private static let namespaceUTF8: StaticString = "logship."

    private static let reservedUTF8 = ByteNames(record.union(resource))
}
