import Foundation

/// A stop to all delivery, because of what the remote answered.
public struct DeliveryPause: Hashable, Sendable {
    public enum Cause: String, Hashable, Sendable {
        /// The remote failed or asked for time: transport errors, timeouts, 408, 429, 5xx.
        case remoteUnavailable = "remote unavailable"
        /// The remote refuses the endpoint or the credentials (or every record it is sent).
        case endpointRefused = "remote refuses the endpoint or the credentials"
    }

    /// When delivery may try again.
    public var until: Date
    public var cause: Cause
    /// The failure, in one line: `HTTP 401: unauthorized`, `transport error: connection refused`.
    public var reason: String

    public init(until: Date, cause: Cause, reason: String) {
        self.until = until
        self.cause = cause
        self.reason = reason
    }
}

extension DeliveryPause {
    /// When a batch put back because of this pause may be claimed again: crash records at once, since the shipper
    /// lets them probe the remote through the pause (``ShipperStateMachine/CrashProbe``); the rest when it ends.
    func readyAgain(_ batch: Batch) -> Date {
        batch.priority == .crash ? Date() : until
    }
}
