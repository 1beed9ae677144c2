import Foundation

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
    /// Records refused since start, for want of room that could be made (``AppendReceipt/refusal``), or still
    /// waiting for room when the spool closed.
    public var refused: Int = 0
    /// Of ``evicted`` and ``refused``, those the disk was short for (`spool.min_free_disk`), not the budget.
    public var evictedForDisk: Int = 0
    public var refusedForDisk: Int = 0
    /// When records were last evicted or refused because the disk was short.
    public var lastDiskShortage: Date?
    /// Records from the ingest sockets that wait for room; their sockets are not read meanwhile.
    public var waitingForRoom: Int = 0
    /// The spool's filesystem; `nil` for a spool in memory.
    public var disk: SpoolDiskStatus?
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

/// The spool's filesystem, as `logctl status` shows it.
public struct SpoolDiskStatus: Hashable, Sendable {
    /// Bytes logshipd may still write there.
    public var free: Int
    public var size: Int
    /// What the spool leaves free: `spool.min_free_disk`, or less on a filesystem too small for it.
    public var minimumFree: Int
    /// `spool.min_free_disk`.
    public var configuredMinimumFree: Int
    /// The space held in reserve for the spool's own writes; 0 once given to a full disk.
    public var reserve: Int
}
