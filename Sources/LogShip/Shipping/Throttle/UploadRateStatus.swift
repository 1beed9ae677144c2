/// The link's budget and the rate in force, for status and metrics.
public struct UploadRateStatus: Hashable, Sendable {
    /// The byte budget in force (`nil`: none).
    public var budgetBytesPerSecond: Int?
    /// Whether the budget is an operator's (`logctl throttle`) rather than the configuration's.
    public var isOverridden: Bool
    /// The rate bytes may go at now (`nil`: no limit): the budget, or less while the receiver is overloaded.
    public var effectiveBytesPerSecond: Int?
    /// Whether a receiver's overload (429, or 503s that are more than noise) holds the rate down.
    public var isHeldDownByReceiver: Bool
    public var requestsPerSecond: Double?
}

extension UploadRateLimiter {
    /// The budget and the rate in force at `now`.
    func status(at now: ContinuousClock.Instant) -> UploadRateStatus {
        UploadRateStatus(
            budgetBytesPerSecond: bytesPerSecond, isOverridden: override != nil,
            effectiveBytesPerSecond: effectiveBytesPerSecond(at: now).map { Int($0.rounded()) },
            isHeldDownByReceiver: isHeldDownByReceiver(at: now), requestsPerSecond: requestsPerSecond)
    }
}
