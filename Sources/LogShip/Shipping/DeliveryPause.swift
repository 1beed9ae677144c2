/// A stop to all delivery, because of what the remote answered.
public struct DeliveryPause: Hashable, Sendable {
    public enum Cause: String, Hashable, Sendable {
        /// The remote failed or asked for time: no answer, timeouts, 408, 429, 5xx.
        case remoteUnavailable = "remote unavailable"
        /// The remote refuses the endpoint or the credentials (or every record it is sent).
        case endpointRefused = "remote refuses the endpoint or the credentials"
    }

    /// When delivery may try again.
    public var until: ContinuousClock.Instant
    public var cause: Cause
    /// The failure, in one line: `HTTP 401: unauthorized`, `cannot connect to 127.0.0.1:8514: connection refused`.
    public var reason: String
    /// Whether the remote set the pause's length itself (`Retry-After`): a wait it asked for is kept whole.
    public var isAskedByRemote: Bool

    public init(until: ContinuousClock.Instant, cause: Cause, reason: String, isAskedByRemote: Bool = false) {
        self.until = until
        self.cause = cause
        self.reason = reason
        self.isAskedByRemote = isAskedByRemote
    }

    /// Whether a waiting crash record may probe the remote before the pause ends: only while the remote is merely
    /// unavailable and has not asked for the wait itself. A remote that refuses the endpoint or the credentials
    /// does not come back by itself, and one that said how long to wait is obeyed.
    public var allowsCrashProbes: Bool { cause == .remoteUnavailable && !isAskedByRemote }
}
