import Foundation

/// What delivery did, as counts that add up: of one batch in a ``DeliveryReport``, or since start in the
/// shipper's statistics.
public struct DeliveryCounts: Hashable, Sendable {
    /// Records the remote accepted.
    public var delivered = 0
    /// Records moved to the dead-letter table.
    public var deadLettered = 0
    /// Requests sent.
    public var requests = 0
    /// Requests that failed (and were retried or paused on).
    public var failedRequests = 0

    public init() {}

    public static func += (lhs: inout Self, rhs: Self) {
        lhs.delivered += rhs.delivered
        lhs.deadLettered += rhs.deadLettered
        lhs.requests += rhs.requests
        lhs.failedRequests += rhs.failedRequests
    }
}

/// The settlement of one claimed batch.
public struct DeliveryReport: Hashable, Sendable {
    public var counts = DeliveryCounts()
    /// Set when the remote could not or would not take records: nothing should be sent before its end.
    public var pause: DeliveryPause?
    /// Set when a settling write failed: the batch's unsettled records are pending again, and the class should
    /// wait until then before it is claimed again.
    public var spoolFailedUntil: Date?
    /// Set when the receiver said it was overloaded (429 or 503 without `Retry-After`) and the rate, not a pause,
    /// answered it: the refusal, in one line. Records went back ready at once, to wait for the lower rate.
    public var overload: String?

    public init() {}
}
