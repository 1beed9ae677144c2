/// A stored record: its place in the spool's arrival order and its NDJSON line.
public struct SpooledRecord: Hashable, Sendable {
    public var sequence: Int64
    public var line: [UInt8]

    public init(sequence: Int64, line: [UInt8]) {
        self.sequence = sequence
        self.line = line
    }
}
