import Foundation

/// The settlement of one claimed batch.
public struct DeliveryReport: Hashable, Sendable {
    public var delivered = 0
    public var deadLettered = 0
    public var requests = 0
    public var failedRequests = 0
    /// Set when the remote could not or would not take records: nothing should be sent before its end.
    public var pause: DeliveryPause?
    /// Set when a settling write failed: the batch's unsettled records are pending again, and the class should
    /// wait until then before it is claimed again.
    public var spoolFailedUntil: Date?

    public init() {}
}
