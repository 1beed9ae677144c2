/// Where the journal input reads from on its first start (`journal.start_at`); afterwards the cursor saved in the
/// spool decides.
public enum JournalStartPosition: String, Sendable {
    /// Only entries written from now on: a new install does not send years of history.
    case tail
    /// Everything the journal holds.
    case head
}
