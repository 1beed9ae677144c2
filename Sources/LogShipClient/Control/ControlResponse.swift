/// The daemon's answer.
public struct ControlResponse: Codable, Hashable, Sendable {
    public var ok: Bool
    /// Records accepted, for `send`.
    public var accepted: Int?
    /// For `send`: crash records beyond the sender's crash budget, accepted as errors.
    public var demoted: Int?
    /// A one-line reason when `ok` is false.
    public var error: String?
    public var status: DaemonStatus?
    public var deadLetters: [DeadLetter]?
    /// Dead letters requeued or purged.
    public var count: Int?
    /// For `pause` and `resume`: whether uploads were not already paused, or not already running.
    public var changed: Bool?

    public init(
        ok: Bool, accepted: Int? = nil, demoted: Int? = nil, error: String? = nil, status: DaemonStatus? = nil,
        deadLetters: [DeadLetter]? = nil, count: Int? = nil, changed: Bool? = nil
    ) {
        self.ok = ok
        self.accepted = accepted
        self.demoted = demoted
        self.error = error
        self.status = status
        self.deadLetters = deadLetters
        self.count = count
        self.changed = changed
    }

    public static func failure(_ reason: String) -> ControlResponse { ControlResponse(ok: false, error: reason) }
}
