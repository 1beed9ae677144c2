/// How far an input that can be re-read (the journal) has read, committed with the records that reading produced.
///
/// Because the position and the records are written in one transaction, a restart after a crash resumes exactly
/// after the last records the spool holds: nothing read is lost and nothing committed is read twice.
public struct InputPosition: Hashable, Sendable {
    /// The input's name (`journal`).
    public var input: String
    /// Where it stands, in the input's own terms (a journal cursor).
    public var cursor: String

    public init(input: String, cursor: String) {
        self.input = input
        self.cursor = cursor
    }
}
