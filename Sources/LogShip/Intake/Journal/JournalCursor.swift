/// Reading a journal cursor (`s=…;i=…;b=…;m=…;t=…;x=…`).
enum JournalCursor {
    /// The wall-clock time the cursor's entry was written, microseconds since 1970 (its `t=` part, in hex); `nil`
    /// when the cursor has none (it is corrupt).
    static func realtime(of cursor: String) -> UInt64? {
        for part in cursor.split(separator: ";") where part.hasPrefix("t=") {
            return UInt64(part.dropFirst(2), radix: 16)
        }
        return nil
    }
}
