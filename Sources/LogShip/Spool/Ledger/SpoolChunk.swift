/// One row of the chunk table as the ledger knows it: a run of records of one class with consecutive sequences.
///
/// The lines are in memory while the chunk is cached (see ``SpoolLedger``); the marks exist once delivery has
/// touched one of its records.
struct SpoolChunk: Sendable {
    /// The most bytes of lines a chunk row may record. Far above any chunk written (``SpoolLedger/maximumChunkBytes``,
    /// or one large record), below what ``ChunkLines`` can index, and about SQLite's own limit on a blob: a row
    /// recording more is damaged, and nothing is allocated for it.
    static let maximumBytes = 1 << 30
    /// Sequences a chunk row may hold, from 0 up to this: a count added to one, or one added to the newest, cannot
    /// overflow, and a class would need thousands of years at millions of records a second to get there.
    static let sequenceLimit: Int64 = 1 << 62

    /// The row's id.
    let id: Int64
    /// The sequence of its first record; record `i` has `firstSequence + i`.
    let firstSequence: Int64
    /// How many records it holds, settled ones included.
    private(set) var count: Int
    /// The length of the stored blob.
    private(set) var blobBytes: Int
    /// The lines, while cached.
    var lines: ChunkLines?
    /// What delivery did with its records; `nil` while every record is pending and ready.
    var marks: RecordMarks?
    /// Who sent every record of it (see ``SpoolEntry/sender``); `nil` when unknown, as in chunks written before
    /// spools kept it.
    let sender: UInt32?

    init(id: Int64, firstSequence: Int64, count: Int, blobBytes: Int, lines: ChunkLines?, sender: UInt32? = nil) {
        self.id = id
        self.firstSequence = firstSequence
        self.count = count
        self.blobBytes = blobBytes
        self.lines = lines
        self.sender = sender
    }

    /// The sequence after its last record.
    var endSequence: Int64 { firstSequence + Int64(count) }

    func contains(_ sequence: Int64) -> Bool {
        sequence >= firstSequence && sequence < endSequence
    }

    func index(of sequence: Int64) -> Int { Int(sequence - firstSequence) }

    func mark(_ index: Int) -> RecordMarks.Mark { marks?[index] ?? .pending }

    var pendingCount: Int { marks?.pendingCount ?? count }
    var settledCount: Int { marks?.settledCount ?? 0 }
    var claimedCount: Int { marks?.claimedCount ?? 0 }

    /// Whether delivery has touched none of its records: what a merge or a cache trim may change.
    var isUntouched: Bool { marks == nil }

    /// The accounted size of every record in it, from the blob's size (lines plus newlines).
    var accountedBytes: Int { blobBytes - count + count * SpoolEntry.overhead }

    /// The accounted size of its records not settled (from their lines once any record is settled).
    var heldBytes: Int {
        guard marks != nil else { return accountedBytes }
        return (0..<count).reduce(0) { $0 + (mark($1) == .settled ? 0 : accountedBytes(of: $1)) }
    }

    /// The accounted size of record `index`; needs the lines.
    func accountedBytes(of index: Int) -> Int {
        (lines?.lineLength(index) ?? 0) + SpoolEntry.overhead
    }

    /// Takes `extended`, its lines with more at the end: records added to the chunk, all pending.
    mutating func extend(to extended: ChunkLines) {
        precondition(extended.count >= count)
        lines = extended
        count = extended.count
        blobBytes = extended.bytes.count
        marks?.grow(to: count)
    }

    /// Marks for changing, created all pending on first use.
    mutating func withMarks<T>(_ body: (inout RecordMarks) -> T) -> T {
        // Taken out, not copied: the marks' arrays stay uniquely referenced, so they change in place.
        var current = marks.take() ?? RecordMarks(count: count)
        defer { marks = current }
        return body(&current)
    }
}
