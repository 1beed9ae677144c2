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

    public init(
        ok: Bool, accepted: Int? = nil, demoted: Int? = nil, error: String? = nil, status: DaemonStatus? = nil,
        deadLetters: [DeadLetter]? = nil, count: Int? = nil
    ) {
        self.ok = ok
        self.accepted = accepted
        self.demoted = demoted
        self.error = error
        self.status = status
        self.deadLetters = deadLetters
        self.count = count
    }

    public static func failure(_ reason: String) -> ControlResponse { ControlResponse(ok: false, error: reason) }
}
