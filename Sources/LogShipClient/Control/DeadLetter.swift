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
