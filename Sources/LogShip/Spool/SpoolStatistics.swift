/// Counts of what the spool holds and has done since start.
public struct SpoolStatistics: Hashable, Sendable {
    /// Unclaimed records per class.
    public var pending: [PriorityClass: Int] = [:]
    /// Records claimed by operations in flight.
    public var claimed: Int = 0
    /// Bytes held against `spool.max_bytes`, claimed records included.
    public var bytes: Int = 0
    /// Records in the dead-letter table.
    public var deadLetters: Int = 0
    /// Records evicted to make room since start.
    public var evicted: Int = 0
    /// Records refused since start: crash records that found no room, or records a failed commit lost.
    public var refused: Int = 0

    public init() {}

    public var pendingTotal: Int { pending.values.reduce(0, +) }
}
