/// A stored record: its place in the spool's arrival order and its NDJSON line.
public struct SpooledRecord: Hashable, Sendable {
    public var sequence: Int64
    /// The line, without its newline. A claim from the SQLite spool hands out a slice of the chunk's lines held in
    /// memory, not a copy of its own: a batch of hundreds of records costs no allocation per record.
    public var line: ArraySlice<UInt8>

    public init(sequence: Int64, line: ArraySlice<UInt8>) {
        self.sequence = sequence
        self.line = line
    }
}
