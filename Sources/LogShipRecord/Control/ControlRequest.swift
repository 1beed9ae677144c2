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
        /// Use `bytesPerSecond` as the upload budget (0: none) until the next reload or restart.
        case throttle
    }

    /// How many dead letters one `dead-letters` request may list, and one `requeue` or `purge` may name by id.
    public static let deadLetterLimits = 1...10_000

    public var command: Command
    public var records: [Submission]?
    public var ids: [Int64]?
    public var all: Bool?
    public var limit: Int?
    /// For `flush`: the least urgent class (or severity) waited for; every class when absent.
    public var priority: String?
    /// For `flush`: how long to wait, in seconds.
    public var timeout: Double?
    /// For `throttle`: request body bytes per second; 0 for no budget.
    public var bytesPerSecond: Int?

    public init(
        command: Command, records: [Submission]? = nil, ids: [Int64]? = nil, all: Bool? = nil, limit: Int? = nil,
        priority: String? = nil, timeout: Double? = nil, bytesPerSecond: Int? = nil
    ) {
        self.command = command
        self.records = records
        self.ids = ids
        self.all = all
        self.limit = limit
        self.priority = priority
        self.timeout = timeout
        self.bytesPerSecond = bytesPerSecond
    }
}
