/// A record as it enters the spool: its class, its encoded NDJSON line, and who sent it.
public struct SpoolEntry: Hashable, Sendable {
    public var priority: PriorityClass
    public var line: [UInt8]
    /// The sender's uid as the kernel or journald reports it; `nil` when none did. Eviction takes from the sender
    /// holding the most bytes of a class first.
    public var sender: UInt32?

    public init(priority: PriorityClass, line: [UInt8], sender: UInt32? = nil) {
        self.priority = priority
        self.line = line
        self.sender = sender
    }

    public init(_ record: LogRecord) {
        self.init(priority: record.priority, line: record.ndjsonLine, sender: record.peer?.uid)
    }

    public init(_ record: EncodedRecord) {
        self.init(priority: record.priority, line: record.line, sender: record.sender)
    }

    /// The sender of a stored NDJSON line: its top-level `"uid"`, the only key whose value can be a bare number
    /// (every field's value is a string), as ``LogRecord/ndjsonLine`` writes it; read without decoding the line.
    static func sender(ofLine line: some Collection<UInt8>) -> UInt32? {
        let key = Array(#""uid":"#.utf8)
        var rest = line[...]
        while let start = rest.firstRange(of: key) {
            let digits = rest[start.upperBound...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            if !digits.isEmpty { return UInt32(String(decoding: digits, as: UTF8.self)) }
            rest = rest[start.upperBound...]
        }
        return nil
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
