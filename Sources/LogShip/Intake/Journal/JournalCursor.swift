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

    /// The time to seek to for the first entry after `realtime`: one microsecond later, or `realtime` itself at
    /// the end of time (a cursor read from the spool may say anything, `t=ffffffffffffffff` included).
    static func timeAfter(_ realtime: UInt64) -> UInt64 {
        realtime < .max ? realtime + 1 : realtime
    }
}
