/// Why the spool did not store records: what `logctl send` tells its user and the log says.
public struct SpoolRefusal: Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case fullOfCrashRecords(budget: Int)
        case full(budget: Int)
        case disk(free: Int, keptFree: Int)
        case larger(than: Int)
    }

    private let code: Code

    /// A crash record found the spool at `spool.max_bytes` with nothing but crash records in it, which are never
    /// evicted.
    static func fullOfCrashRecords(budget: Int) -> SpoolRefusal {
        SpoolRefusal(code: .fullOfCrashRecords(budget: budget))
    }

    /// The spool is at `spool.max_bytes`, and what it holds may not be evicted for the record: records of a class
    /// no lower, records being delivered, dead letters.
    static func full(budget: Int) -> SpoolRefusal { SpoolRefusal(code: .full(budget: budget)) }

    /// The spool's filesystem has `free` bytes, no more than logshipd leaves free there (`keptFree`), and nothing
    /// may be evicted for the record.
    static func disk(free: Int, keptFree: Int) -> SpoolRefusal {
        SpoolRefusal(code: .disk(free: free, keptFree: keptFree))
    }

    /// The record alone is larger than `spool.max_bytes`: it never fits.
    static func larger(than budget: Int) -> SpoolRefusal { SpoolRefusal(code: .larger(than: budget)) }

    /// Whether the disk, not the budget, is short.
    public var isDisk: Bool {
        if case .disk = code { return true }
        return false
    }

    /// Whether `other` gives the same reason, whatever its numbers: a summary counts the two together.
    func isSameReason(as other: SpoolRefusal) -> Bool {
        switch (code, other.code) {
        case (.fullOfCrashRecords, .fullOfCrashRecords), (.full, .full), (.disk, .disk), (.larger, .larger): true
        default: false
        }
    }

    /// Whether the record could never be stored, however much room is made.
    var isPermanent: Bool {
        if case .larger = code { return true }
        return false
    }

    public var description: String {
        switch code {
        case .fullOfCrashRecords(let budget):
            "spool full of crash records (spool.max_bytes \(ByteCountText.approximate(budget)))"
        case .full(let budget):
            "spool full (spool.max_bytes \(ByteCountText.approximate(budget))): nothing it holds may be evicted for "
                + "these records (records of their class or above, records being delivered, dead letters)"
        case .disk(let free, let keptFree):
            "the disk holding the spool has \(ByteCountText.approximate(free)) free and logshipd leaves "
                + "\(ByteCountText.approximate(keptFree)) free (spool.min_free_disk): nothing of a lower class is "
                + "left to evict"
        case .larger(let budget):
            "a record larger than the whole spool (spool.max_bytes \(ByteCountText.approximate(budget)))"
        }
    }
}
