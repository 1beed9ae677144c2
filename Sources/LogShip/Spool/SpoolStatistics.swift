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
    /// Bytes the dead letters hold against `spool.max_bytes` (part of ``bytes``); eviction takes them first.
    public var deadLetterBytes: Int = 0
    /// Records evicted to make room since start.
    public var evicted: Int = 0
    /// Records refused since start: crash records that found no room, or the records of a commit the full disk failed.
    public var refused: Int = 0
    /// Damaged chunks of the spool file quarantined since start: taken out, their readable records made dead
    /// letters with the reason.
    public var quarantinedChunks: Int = 0
    /// Records those chunks held that were not yet delivered, read or not.
    public var quarantinedRecords: Int = 0
    /// Of ``quarantinedRecords``, those that could not be read: lost.
    public var unreadableRecords: Int = 0
    /// The spool file set aside at start because it could not be opened as a database.
    public var setAside: SpoolSetAside?

    public init() {}

    public var pendingTotal: Int { pending.values.reduce(0, +) }
}
