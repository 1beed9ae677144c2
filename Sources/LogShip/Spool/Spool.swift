import Foundation

/// Where accepted records wait until the remote has acknowledged them.
///
/// Records are kept per priority class in arrival order. A `LogOperation` claims a batch of one class; the batch,
/// or any part of it, is then settled (``Settlement``): deleted once delivered, unclaimed to be retried at a given
/// time, or dead-lettered with the reason. Claimed records are invisible to other claims until then. Claims live
/// only as long as the process: after a restart every stored record is unclaimed again.
public protocol Spool: Sendable {
    /// Stores records, evicting lower classes if the spool is full, and returns once they are committed: for a
    /// durable spool, on disk. This is what `logctl send` waits for.
    ///
    /// - Parameters:
    ///   - position: Where the input that produced `entries` has read to; saved in the same transaction
    ///     (``savedPosition(of:)`` returns it), so it can never run ahead of or behind the records.
    ///   - evicting: Whether older records may be evicted to make room. An input that can wait (the journal keeps
    ///     its entries) passes false: entries that do not fit are then all left out, position included, and
    ///     counted as ``AppendReceipt/deferred``.
    /// - Returns: How many entries were accepted, how many records were evicted for room, and how many crash
    ///   records were refused because nothing could be evicted for them.
    /// - Throws: ``SpoolError`` when nothing could be stored (closed, disk full, I/O failure); then the position
    ///   is not saved either.
    func append(_ entries: [SpoolEntry], position: InputPosition?, evicting: Bool) async throws -> AppendReceipt

    /// The position last committed for `input`, if any. A memory spool keeps it only while the process lives.
    func savedPosition(of input: String) async throws -> String?

    /// Hands records to the next commit without waiting for it; waits while the commit queue is full, or, while
    /// records find no room, until these are stored.
    ///
    /// For fire-and-forget inputs (the ingest sockets). What a `kill -9` can lose is bounded by the commit queue.
    /// A record that finds no room, even after what may be evicted for it, is not refused but waits for room, and
    /// the caller with it: its socket is not read meanwhile. The caller does not hear of a commit that fails: the
    /// spool logs it, and counts the records that still waited for room when it closed in
    /// ``SpoolStatistics/refused``.
    ///
    /// - Throws: ``SpoolError/closed`` once the spool is closing.
    func enqueue(_ entries: [SpoolEntry]) async throws

    /// Lets every caller of ``enqueue(_:)`` that waits for room go on, and holds none from now on: the ingest
    /// sockets are stopping, and room may never come. What finds none is kept if room comes before the spool
    /// closes, and counted in ``SpoolStatistics/refused`` and logged if not.
    func stopHoldingSenders()

    /// Announces the classes of every commit, once committed: the shipper's cue that records are ready.
    var availability: Availability { get }

    /// Claims the oldest ready records of one class, up to `limits`.
    func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult

    /// Ends the claim on `batch` (a claimed batch or part of one) as `settlement` says. Records of it no longer
    /// claimed are left as they are.
    ///
    /// - Throws: ``SpoolError`` when a settling write fails or the spool is closed. Records it did not settle
    ///   stay claimed: the caller gives them back with ``Settlement/putBack``, which writes nothing and fails
    ///   only once the spool is closed.
    func settle(_ batch: Batch, _ settlement: Settlement) async throws

    /// How far arrival has come in each class: the place of the newest record committed so far.
    func arrivalMark() async throws -> ArrivalMark

    /// How many records of `classes` at or before `mark` in their class's arrival order the spool still holds,
    /// pending or claimed: what `logctl flush` waits to see reach zero.
    func heldRecords(upTo mark: ArrivalMark, in classes: Set<PriorityClass>) async throws -> Int

    /// The timestamp of the oldest record of each class the spool holds, pending or claimed.
    func oldestTimestamps() async throws -> [PriorityClass: Timestamp]

    /// Current counts, for status output and tests.
    func statistics() async -> SpoolStatistics

    /// Commits what is queued and closes the spool; later calls throw ``SpoolError/closed``.
    func close() async
}

extension Spool {
    /// Stores records from an input that keeps no position, returning once they are committed.
    public func append(_ entries: [SpoolEntry]) async throws -> AppendReceipt {
        try await append(entries, position: nil, evicting: true)
    }

    /// The classes that hold unclaimed records, ready or not; read at start-up to resume delivery.
    public func pendingClasses() async -> Set<PriorityClass> {
        Set(await statistics().pending.filter { $0.value > 0 }.keys)
    }
}
