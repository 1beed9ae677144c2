import Foundation

/// Where accepted records wait until the remote has acknowledged them.
///
/// Records are kept per priority class in arrival order. A `LogOperation` claims a batch of one class, and the
/// batch is then either acknowledged (deleted) or released (put back at its place, ready again at a given time).
/// Claimed records are invisible to other claims until one of the two happens.
///
/// - Important: ``append(_:)`` returns only once the records are accepted: for a durable spool that means
///   committed to disk, and it is what `logctl send` waits for.
public protocol Spool: Sendable {
    /// Stores records, evicting lower classes if the spool is full.
    ///
    /// - Returns: How many entries were accepted, how many records (older or these) were evicted for room, and
    ///   how many were refused because not even eviction could make room.
    /// - Throws: ``SpoolError`` when the spool cannot store anything (closed, I/O failure).
    func append(_ entries: [SpoolEntry]) async throws -> AppendReceipt

    /// Claims the oldest ready records of one class, up to `limits`.
    func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult

    /// Deletes a delivered batch.
    func acknowledge(_ batch: Batch) async throws

    /// Puts a batch back at its place in its class, ready again at `retryAt`.
    func release(_ batch: Batch, retryAt: Date) async throws

    /// The classes that hold unclaimed records, ready or not; read at start-up to resume delivery.
    func pendingClasses() async throws -> Set<PriorityClass>

    /// Current counts, for status output and tests.
    func statistics() async -> SpoolStatistics
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
    public var id: Int64
    public var priority: PriorityClass
    public var records: [SpooledRecord]

    public init(id: Int64, priority: PriorityClass, records: [SpooledRecord]) {
        self.id = id
        self.priority = priority
        self.records = records
    }

    /// The size of the NDJSON body: every line plus its newline.
    public var byteCount: Int { records.reduce(0) { $0 + $1.line.count + 1 } }
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

/// Counts of what the spool holds and has done since start.
public struct SpoolStatistics: Hashable, Sendable {
    /// Unclaimed records per class.
    public var pending: [PriorityClass: Int] = [:]
    /// Records claimed by operations in flight.
    public var claimed: Int = 0
    /// Bytes held, claimed records included.
    public var bytes: Int = 0
    /// Records evicted to make room since start.
    public var evicted: Int = 0
    /// Records refused since start because nothing could be evicted for them.
    public var refused: Int = 0

    public init() {}

    public var pendingTotal: Int { pending.values.reduce(0, +) }
}

/// Errors thrown by a spool.
public struct SpoolError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case unknownBatch
        case closed
    }

    private let code: Code
    private let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// A batch was acknowledged or released twice, or was never claimed.
    public static func unknownBatch(_ id: Int64) -> SpoolError { SpoolError(.unknownBatch, "batch \(id)") }

    /// The spool has been closed.
    public static let closed = SpoolError(.closed, "")

    public var description: String {
        switch code {
        case .unknownBatch: "spool: unknown \(detail)"
        case .closed: "spool: closed"
        }
    }
}
