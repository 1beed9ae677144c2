/// What the journal input is doing, for `logctl status`.
public struct JournalStatus: Codable, Hashable, Sendable {
    /// `starting`, `following`, `paused: spool full`, or `stopped: <why>`.
    public var state: String
    /// The time of the last entry committed with the spool (RFC 3339), if any.
    public var position: String?
    /// How far the last entry read is behind the newest entry in the journal, in seconds.
    public var behindSeconds: Double?
    /// Entries read since start, shipped or not.
    public var read: Int
    /// Entries the selection (units, priority) left out.
    public var filtered: Int

    public init(
        state: String, position: String? = nil, behindSeconds: Double? = nil, read: Int = 0, filtered: Int = 0
    ) {
        self.state = state
        self.position = position
        self.behindSeconds = behindSeconds
        self.read = read
        self.filtered = filtered
    }
}
