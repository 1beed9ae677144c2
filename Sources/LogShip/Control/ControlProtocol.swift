/// The messages `logctl` and the daemon exchange on the control socket: one JSON object per line each way, one
/// response per request, in order.
public enum ControlProtocol {
    /// The longest request line the daemon reads.
    public static let maximumRequestBytes = 16 << 20
}

/// A request from `logctl`.
public struct ControlRequest: Codable, Hashable, Sendable {
    public enum Command: String, Codable, Hashable, Sendable {
        /// Accept records; answered once they are accepted.
        case send
        /// Report counts.
        case status
    }

    public var command: Command
    public var records: [Submission]?

    public init(command: Command, records: [Submission]? = nil) {
        self.command = command
        self.records = records
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

    public init(ok: Bool, accepted: Int? = nil, error: String? = nil, status: DaemonStatus? = nil) {
        self.ok = ok
        self.accepted = accepted
        self.error = error
        self.status = status
    }

    public static func failure(_ reason: String) -> ControlResponse { ControlResponse(ok: false, error: reason) }
}

/// Counts reported by `logctl status`.
public struct DaemonStatus: Codable, Hashable, Sendable {
    public var accepted: Int
    public var truncated: Int
    public var evicted: Int
    public var refused: Int
    public var delivered: Int
    public var failedRequests: Int
    public var inFlight: Int
    /// Pending records per class name.
    public var pending: [String: Int]

    public init(
        accepted: Int, truncated: Int, evicted: Int, refused: Int, delivered: Int, failedRequests: Int, inFlight: Int,
        pending: [String: Int]
    ) {
        self.accepted = accepted
        self.truncated = truncated
        self.evicted = evicted
        self.refused = refused
        self.delivered = delivered
        self.failedRequests = failedRequests
        self.inFlight = inFlight
        self.pending = pending
    }
}
