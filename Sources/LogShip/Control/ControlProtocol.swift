/// The messages `logctl` and the daemon exchange on the control socket: one JSON object per line each way, one
/// response per request, in order.
public enum ControlProtocol {
    /// The longest request line the daemon reads.
    public static let maximumRequestBytes = 16 << 20
}

/// A request from `logctl`.
public struct ControlRequest: Codable, Hashable, Sendable {
    public enum Command: String, Codable, Hashable, Sendable {
        /// Accept records; answered once they are committed.
        case send
        /// Report counts.
        case status
        /// List dead letters, oldest first, up to `limit`.
        case deadLetters = "dead-letters"
        /// Put dead letters (`ids`, or all with `all`) back into their class.
        case requeue
        /// Delete dead letters (`ids`, or all with `all`).
        case purge
        /// Stop uploads; intake goes on.
        case pause
        /// Restart uploads.
        case resume
        /// Wait until the records of `priority` and above accepted before the request have left the spool, at
        /// most `timeout` seconds.
        case flush
    }

    public var command: Command
    public var records: [Submission]?
    public var ids: [Int64]?
    public var all: Bool?
    public var limit: Int?
    /// For `flush`: the least urgent class (or severity) waited for; every class when absent.
    public var priority: String?
    /// For `flush`: how long to wait, in seconds.
    public var timeout: Double?

    public init(
        command: Command, records: [Submission]? = nil, ids: [Int64]? = nil, all: Bool? = nil, limit: Int? = nil,
        priority: String? = nil, timeout: Double? = nil
    ) {
        self.command = command
        self.records = records
        self.ids = ids
        self.all = all
        self.limit = limit
        self.priority = priority
        self.timeout = timeout
    }
}

/// One record submitted with `logctl send`.
public struct Submission: Codable, Hashable, Sendable {
    public var message: String
    /// A class name (`crash`, …) or a syslog severity (`0`–`7`, `err`, …); `info` when absent.
    public var priority: String?
    public var fields: [String: String]?
    /// When the line was read, RFC 3339; the daemon's arrival time when absent.
    public var timestamp: String?
    /// Set when `logctl` already cut the message.
    public var truncated: Bool?

    public init(
        message: String, priority: String? = nil, fields: [String: String]? = nil, timestamp: String? = nil,
        truncated: Bool? = nil
    ) {
        self.message = message
        self.priority = priority
        self.fields = fields
        self.timestamp = timestamp
        self.truncated = truncated
    }
}

/// The daemon's answer.
public struct ControlResponse: Codable, Hashable, Sendable {
    public var ok: Bool
    /// Records accepted, for `send`.
    public var accepted: Int?
    /// A one-line reason when `ok` is false.
    public var error: String?
    public var status: DaemonStatus?
    public var deadLetters: [DeadLetter]?
    /// Dead letters requeued or purged.
    public var count: Int?

    public init(
        ok: Bool, accepted: Int? = nil, error: String? = nil, status: DaemonStatus? = nil,
        deadLetters: [DeadLetter]? = nil, count: Int? = nil
    ) {
        self.ok = ok
        self.accepted = accepted
        self.error = error
        self.status = status
        self.deadLetters = deadLetters
        self.count = count
    }

    public static func failure(_ reason: String) -> ControlResponse { ControlResponse(ok: false, error: reason) }
}

/// Counts reported by `logctl status`.
public struct DaemonStatus: Codable, Hashable, Sendable {
    /// Records received from all inputs since start.
    public var received: Int
    public var truncated: Int
    /// Unclaimed records in the spool per class name.
    public var pending: [String: Int]
    /// Records claimed by requests in flight.
    public var claimed: Int
    public var spoolBytes: Int
    public var evicted: Int
    public var refused: Int
    public var delivered: Int
    /// Records in the dead-letter table.
    public var deadLetters: Int
    public var requests: Int
    public var failedRequests: Int
    public var inFlight: Int
    /// When delivery resumes after a failure, RFC 3339, if it is paused.
    public var pausedUntil: String?
    /// Why delivery is paused: `remote unavailable` or `remote refuses the endpoint or the credentials`.
    public var pauseCause: String?
    /// The failure that paused delivery, in one line (`HTTP 401: …`); after the pause, until a request succeeds.
    public var lastFailure: String?
    /// The journal input's state, when it is enabled.
    public var journal: JournalStatus?
    /// Whether an operator paused uploads (`logctl pause`).
    public var operatorPaused: Bool?

    public init(
        received: Int, truncated: Int, pending: [String: Int], claimed: Int, spoolBytes: Int, evicted: Int,
        refused: Int, delivered: Int, deadLetters: Int, requests: Int, failedRequests: Int, inFlight: Int,
        pausedUntil: String?, pauseCause: String? = nil, lastFailure: String? = nil, journal: JournalStatus? = nil,
        operatorPaused: Bool? = nil
    ) {
        self.received = received
        self.truncated = truncated
        self.pending = pending
        self.claimed = claimed
        self.spoolBytes = spoolBytes
        self.evicted = evicted
        self.refused = refused
        self.delivered = delivered
        self.deadLetters = deadLetters
        self.requests = requests
        self.failedRequests = failedRequests
        self.inFlight = inFlight
        self.pausedUntil = pausedUntil
        self.pauseCause = pauseCause
        self.lastFailure = lastFailure
        self.journal = journal
        self.operatorPaused = operatorPaused
    }
}
