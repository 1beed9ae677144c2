/// One journal entry as read: its time and the fields logshipd asked for (never all of an entry's
/// fields, so never a coredump's `COREDUMP`, the core itself).
struct JournalEntry: Hashable, Sendable {
    /// Wall-clock time, microseconds since 1970.
    var realtime: UInt64
    /// Field name to value, without the `NAME=` prefix; each at most the data threshold.
    var fields: [String: [UInt8]]
}
