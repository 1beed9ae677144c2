import Foundation
import Logging

/// Where accepted records wait until the remote has acknowledged them.
///
/// Records are kept per priority class in arrival order. A `LogOperation` claims a batch of one class; the batch,
/// or any part of it, is then acknowledged (deleted), released (put back at its place, ready again at a given
/// time) or dead-lettered (moved aside with the reason). Claimed records are invisible to other claims until then.
/// Claims live only as long as the process: after a restart every stored record is unclaimed again.
public protocol Spool: Sendable {
    /// Stores records, evicting lower classes if the spool is full, and returns once they are committed: for a
    /// durable spool, on disk. This is what `logctl send` waits for.
    ///
    /// - Returns: How many entries were accepted, how many records were evicted for room, and how many crash
    ///   records were refused because nothing could be evicted for them.
    /// - Throws: ``SpoolError`` when nothing could be stored (closed, disk full, I/O failure).
    func append(_ entries: [SpoolEntry]) async throws -> AppendReceipt

    /// Hands records to the next commit without waiting for it; waits only while the commit queue is full.
    ///
    /// For fire-and-forget inputs (the ingest sockets). What a `kill -9` can lose is bounded by the commit queue.
    /// Failures are counted in ``statistics()`` and logged by the spool.
    func enqueue(_ entries: [SpoolEntry]) async throws

    /// Announces the classes of every commit, once committed: the shipper's cue that records are ready.
    var availability: Availability { get }

    /// Claims the oldest ready records of one class, up to `limits`.
    func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult

    /// Deletes delivered records: a claimed batch or part of one.
    func acknowledge(_ batch: Batch) async throws

    /// Puts claimed records back at their place in their class, ready again at `retryAt`.
    func release(_ batch: Batch, retryAt: Date) async throws

    /// Moves claimed records the remote will never accept to the dead-letter table.
    func deadLetter(_ batch: Batch, failure: DeliveryFailure) async throws

    /// Forgets the claim on those of `batch`'s records still claimed, so they are pending again as stored,
    /// without writing anything: what is left when a settling write (acknowledge, release, dead letter) failed.
    /// It cannot fail, so no claim outlives its operation.
    func returnToPending(_ batch: Batch) async

    /// The classes that hold unclaimed records, ready or not; read at start-up to resume delivery.
    func pendingClasses() async throws -> Set<PriorityClass>

    /// Dead letters, oldest first.
    func deadLetters(limit: Int) async throws -> [DeadLetter]

    /// Moves dead letters back into their class at their original place. Returns how many moved.
    func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> Int

    /// Deletes dead letters. Returns how many were deleted.
    func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int

    /// Current counts, for status output and tests.
    func statistics() async -> SpoolStatistics

    /// Commits what is queued and closes the spool; later calls throw ``SpoolError/closed``.
    func close() async
}

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

/// A stored record: its place in the spool's arrival order and its NDJSON line.
public struct SpooledRecord: Hashable, Sendable {
    public var sequence: Int64
    public var line: [UInt8]

    public init(sequence: Int64, line: [UInt8]) {
        self.sequence = sequence
        self.line = line
    }
}

/// Records claimed together for one request, all of one class, oldest first.
public struct Batch: Hashable, Sendable {
    public var priority: PriorityClass
    public var records: [SpooledRecord]
    /// The claim's place in claim order since the spool opened (1, 2, …), given where claims are serialised so
    /// that two claims racing each other are still numbered in the order they took their records.
    public var number: Int

    public init(priority: PriorityClass, records: [SpooledRecord], number: Int = 0) {
        self.priority = priority
        self.records = records
        self.number = number
    }

    /// The size of the NDJSON body: every line plus its newline.
    public var byteCount: Int { records.reduce(0) { $0 + $1.line.count + 1 } }

    /// The first and second half, to find the records a remote refuses.
    public func halves() -> (Batch, Batch) {
        let middle = records.count / 2
        return (
            Batch(priority: priority, records: Array(records[..<middle]), number: number),
            Batch(priority: priority, records: Array(records[middle...]), number: number)
        )
    }

    var sequences: [Int64] { records.map(\.sequence) }
}

/// How large one request may be.
public struct BatchLimits: Hashable, Sendable {
    public var maxRecords: Int
    public var maxBytes: Int

    public init(maxRecords: Int, maxBytes: Int) {
        precondition(maxRecords > 0 && maxBytes > 0)
        self.maxRecords = maxRecords
        self.maxBytes = maxBytes
    }
}

/// What a claim found.
public enum ClaimResult: Hashable, Sendable {
    /// A batch; `moreReady` says whether ready records of the class remain unclaimed.
    case batch(Batch, moreReady: Bool)
    /// The class's oldest record waits for a retry time: nothing of the class goes before it.
    case waiting(until: Date)
    /// The class holds no unclaimed records.
    case empty
}

/// The outcome of ``Spool/append(_:)``.
public struct AppendReceipt: Hashable, Sendable {
    public var accepted: Int
    public var evicted: Int
    public var refused: Int

    public init(accepted: Int = 0, evicted: Int = 0, refused: Int = 0) {
        self.accepted = accepted
        self.evicted = evicted
        self.refused = refused
    }
}

/// Why the remote refused records for good.
public struct DeliveryFailure: Hashable, Sendable {
    /// The HTTP status, when the remote answered.
    public var status: Int?
    /// A one-line reason, with the start of the response body.
    public var reason: String

    public init(status: Int?, reason: String) {
        self.status = status
        self.reason = reason
    }
}

/// A record the remote refused for good, kept with the reason.
public struct DeadLetter: Hashable, Sendable, Codable {
    public var id: Int64
    public var priority: String
    public var line: String
    public var status: Int?
    public var reason: String
    /// When it was set aside, RFC 3339.
    public var failedAt: String

    public init(id: Int64, priority: String, line: String, status: Int?, reason: String, failedAt: String) {
        self.id = id
        self.priority = priority
        self.line = line
        self.status = status
        self.reason = reason
        self.failedAt = failedAt
    }
}

/// Which dead letters a command applies to.
public enum DeadLetterSelection: Hashable, Sendable {
    case all
    case ids([Int64])
}

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

/// Errors thrown by a spool.
public struct SpoolError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case closed
        case diskFull
        case inUse
        case storage
    }

    private let code: Code
    private let detail: String

    private init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The spool has been closed.
    public static let closed = SpoolError(.closed)

    /// The disk is full and nothing could be evicted to make room.
    public static let diskFull = SpoolError(.diskFull)

    /// Another process holds the spool file.
    public static func inUse(_ path: String) -> SpoolError { SpoolError(.inUse, path) }

    /// The storage failed.
    public static func storage(_ detail: String) -> SpoolError { SpoolError(.storage, detail) }

    public var description: String {
        switch code {
        case .closed: "spool closed"
        case .diskFull: "spool: disk full and nothing left to evict"
        case .inUse: "spool \(detail) is in use by another process (is another logshipd running?)"
        case .storage: "spool: \(detail)"
        }
    }
}

extension Logger {
    /// Logs crash records a spool refused for want of room: the one place that says so, whichever input sent them.
    func reportRefused(_ count: Int) {
        guard count > 0 else { return }
        error("spool full of crash records; crash records refused", metadata: ["logship.spool.refused": "\(count)"])
    }
}
