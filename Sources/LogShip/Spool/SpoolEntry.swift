/// A record as it enters the spool: its class and its encoded NDJSON line.
public struct SpoolEntry: Hashable, Sendable {
    public var priority: PriorityClass
    public var line: [UInt8]

    public init(priority: PriorityClass, line: [UInt8]) {
        self.priority = priority
        self.line = line
    }

    public init(_ record: LogRecord) {
        self.init(priority: record.priority, line: record.ndjsonLine)
    }

    /// The bytes it counts for against `spool.max_bytes`: its line plus bookkeeping.
    var accountedBytes: Int { line.count + SpoolEntry.overhead }

    /// Per-record bookkeeping, so a spool of tiny records still respects its budget.
    static let overhead = 64
}
