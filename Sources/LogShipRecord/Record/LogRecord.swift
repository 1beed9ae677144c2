/// One log record, as logshipd ships it.
public struct LogRecord: Hashable, Sendable {
    /// Where a record entered the daemon.
    public enum Source: String, Hashable, Sendable {
        case socket
        case datagram
        case control
        case journal
    }

    public var timestamp: Timestamp
    public var priority: PriorityClass
    public var severity: Severity
    /// The name of the host the record came from.
    public var host: String
    public var source: Source
    public var message: String
    /// The sender's identity; `nil` when the kernel gave none.
    public var peer: PeerCredentials?
    /// Extra key-value data: syslog tag and structured data, JSON fields, `logctl send --field`.
    public var fields: RecordFields
    /// Whether the message was cut at the size limit.
    public var truncated: Bool

    public init(
        timestamp: Timestamp,
        priority: PriorityClass,
        severity: Severity,
        host: String,
        source: Source,
        message: String,
        peer: PeerCredentials? = nil,
        fields: RecordFields = [:],
        truncated: Bool = false
    ) {
        self.timestamp = timestamp
        self.priority = priority
        self.severity = severity
        self.host = host
        self.source = source
        self.message = message
        self.peer = peer
        self.fields = fields
        self.truncated = truncated
    }
}
