import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// An open journal, read through libsystemd's `sd_journal`: the local system's, or the files of one directory.
///
/// - Important: An `sd_journal` must be used from one and the same thread for its whole life, closing included
///   (sd-journal(3), "Thread safety"). ``JournalReader`` creates, uses and closes it on the one thread of its own
///   pool; `@unchecked Sendable` lets it be handed to that thread and no further.
final class Journal: @unchecked Sendable {
    /// What ``wait(timeout:)`` saw.
    enum Change {
        /// Nothing changed within the timeout.
        case none
        /// Entries were appended.
        case append
        /// Files were added, removed or rotated: positions must be checked.
        case invalidate
    }

    private var handle: OpaquePointer?

    /// Opens the local journal (`SD_JOURNAL_LOCAL_ONLY`), or the journal files in `directory`.
    ///
    /// - Throws: ``JournalError`` when it cannot be opened.
    init(directory: String?) throws {
        var handle: OpaquePointer?
        let result: Int32
        if let directory {
            result = sd_journal_open_directory(&handle, directory, 0)
        } else {
            result = sd_journal_open(&handle, Int32(SD_JOURNAL_LOCAL_ONLY))
        }
        guard result >= 0, let handle else {
            throw JournalError(
                call: directory.map { "open journal directory \($0)" } ?? "open the local journal", result)
        }
        self.handle = handle
    }

    /// Closes the journal; it must be called on the thread that opened it.
    func close() {
        sd_journal_close(handle)
        handle = nil
    }

    /// Adds a `FIELD=value` match: matches on one field are alternatives, on different fields all must hold.
    func addMatch(_ match: String) throws {
        let result = match.utf8CString.withUnsafeBufferPointer { sd_journal_add_match(handle, $0.baseAddress, 0) }
        guard result >= 0 else { throw JournalError(call: "add match \(match)", result) }
    }

    /// Bounds how much of one field is read (and decompressed).
    func setDataThreshold(_ bytes: Int) throws {
        try check(sd_journal_set_data_threshold(handle, bytes), "set the data threshold")
    }

    func seekHead() throws { try check(sd_journal_seek_head(handle), "seek to the head") }

    func seekTail() throws { try check(sd_journal_seek_tail(handle), "seek to the tail") }

    func seek(cursor: String) throws { try check(sd_journal_seek_cursor(handle, cursor), "seek to a cursor") }

    func seek(realtime microseconds: UInt64) throws {
        try check(sd_journal_seek_realtime_usec(handle, microseconds), "seek to a time")
    }

    /// Moves to the next entry; false at the end.
    func next() throws -> Bool {
        let result = sd_journal_next(handle)
        guard result >= 0 else { throw JournalError(call: "read the next entry", result) }
        return result > 0
    }

    /// Moves to the previous entry; false at the start.
    func previous() throws -> Bool {
        let result = sd_journal_previous(handle)
        guard result >= 0 else { throw JournalError(call: "read the previous entry", result) }
        return result > 0
    }

    /// The current entry's cursor.
    func cursor() throws -> String {
        var cursor: UnsafeMutablePointer<CChar>?
        try check(sd_journal_get_cursor(handle, &cursor), "get the cursor")
        defer { free(cursor) }
        return cursor.map { String(cString: $0) } ?? ""
    }

    /// Whether the current entry is the one `cursor` names.
    func isAt(cursor: String) -> Bool {
        sd_journal_test_cursor(handle, cursor) > 0
    }

    /// The current entry's wall-clock time, in microseconds since 1970.
    func realtime() throws -> UInt64 {
        var microseconds: UInt64 = 0
        try check(sd_journal_get_realtime_usec(handle, &microseconds), "get the entry's time")
        return microseconds
    }

    /// The value of `field` in the current entry (without `FIELD=`), or `nil` when the entry has no such field.
    /// At most the data threshold is read.
    func value(of field: String) throws -> [UInt8]? {
        var data: UnsafeRawPointer?
        var length = 0
        let result = sd_journal_get_data(handle, field, &data, &length)
        if result == -ENOENT { return nil }
        guard result >= 0, let data else { throw JournalError(call: "read field \(field)", result) }
        let prefix = field.utf8.count + 1
        guard length >= prefix else { return [] }
        return Array(UnsafeRawBufferPointer(start: data + prefix, count: length - prefix))
    }

    /// The fields of the current entry that are in `names`, each at most the data threshold: one pass over the
    /// entry (asking for each field by name looks through all of its fields every time). It reads every field it
    /// passes, so it must not be used on an entry with a field too large to read, such as a coredump's core.
    func values(of names: Set<String>) throws -> [String: [UInt8]] {
        var values: [String: [UInt8]] = [:]
        sd_journal_restart_data(handle)
        var data: UnsafeRawPointer?
        var length = 0
        while true {
            let result = sd_journal_enumerate_data(handle, &data, &length)
            if result == 0 { break }
            guard result > 0, let data else { throw JournalError(call: "read the entry's fields", result) }
            let field = UnsafeRawBufferPointer(start: data, count: length)
            guard let equals = field.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(decoding: field[..<equals], as: UTF8.self)
            if names.contains(name) { values[name] = Array(field[(equals + 1)...]) }
        }
        return values
    }

    /// The time of the newest entry in the journal, if it has any.
    func newestRealtime() -> UInt64? {
        var from: UInt64 = 0
        var to: UInt64 = 0
        return sd_journal_get_cutoff_realtime_usec(handle, &from, &to) > 0 ? to : nil
    }

    /// Waits up to `timeout` for the journal to change (`sd_journal_wait`).
    func wait(timeout: Duration) throws -> Change {
        let microseconds = UInt64(timeout.components.seconds) * 1_000_000
            + UInt64(timeout.components.attoseconds / 1_000_000_000_000)
        let result = sd_journal_wait(handle, microseconds)
        guard result >= 0 else { throw JournalError(call: "wait for the journal", result) }
        switch result {
        case Int32(SD_JOURNAL_APPEND): return .append
        case Int32(SD_JOURNAL_INVALIDATE): return .invalidate
        default: return .none
        }
    }

    private func check(_ result: Int32, _ call: String) throws {
        guard result >= 0 else { throw JournalError(call: call, result) }
    }
}
