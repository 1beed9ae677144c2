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

    public init(_ record: EncodedRecord) {
        self.init(priority: record.priority, line: record.line)
    }

    /// The bytes it counts for against `spool.max_bytes`: its line plus bookkeeping.
    var accountedBytes: Int { line.count + SpoolEntry.overhead }

    /// Per-record bookkeeping, so a spool of tiny records still respects its budget.
    static let overhead = 64

    /// The timestamp a stored NDJSON line starts with (`{"timestamp":"…"`), as ``LogRecord/ndjsonLine`` writes
    /// it; read without decoding the line.
    static func timestamp(ofLine line: some Collection<UInt8>) -> Timestamp? {
        let prefix = Array(#"{"timestamp":""#.utf8)
        guard line.starts(with: prefix) else { return nil }
        let rest = line.dropFirst(prefix.count)
        guard let end = rest.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return Timestamp(rfc3339: String(decoding: rest[..<end], as: UTF8.self))
    }
}
