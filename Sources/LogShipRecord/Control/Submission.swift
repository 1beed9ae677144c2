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
