/// One journal entry as read: its time and the fields logshipd asked for (never all of an entry's
/// fields, so never a coredump's `COREDUMP`, the core itself).
package struct JournalEntry: Hashable, Sendable {
    /// Wall-clock time, microseconds since 1970.
    package var realtime: UInt64
    /// Field name to value, without the `NAME=` prefix; each at most the data threshold.
    package var fields: [String: [UInt8]]

    package init(realtime: UInt64, fields: [String: [UInt8]]) {
        self.realtime = realtime
        self.fields = fields
    }

    /// The value of `field` as text (invalid UTF-8 repaired), or `nil` when the entry has no such field.
    package func text(_ field: String) -> String? {
        fields[field].map { String(decoding: $0, as: UTF8.self) }
    }
}
