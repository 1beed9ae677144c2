import Synchronization

/// The link's budget, shared by every operation of one shipper: what each claim may take, what the requests
/// spent, and how fast an overloaded receiver lets us go. ``UploadRateLimiter`` decides; this holds it under a
/// lock and tells it the time.
public final class UploadThrottle: Sendable {
    private let limiter: Mutex<UploadRateLimiter>
    /// Told after the budget changed (a reload, `logctl throttle`).
    private let changeObservers = Mutex<[@Sendable () -> Void]>([])

    public init(budget: UploadRateBudget) {
        limiter = Mutex(UploadRateLimiter(budget: budget, now: .now))
    }

    /// Whether `priorityClass` may claim now, and within which limits (see ``UploadRateLimiter/admit(_:within:now:)``).
    func admit(_ priorityClass: PriorityClass, within limits: BatchLimits) -> UploadRateLimiter.Admission {
        limiter.withLock { $0.admit(priorityClass, within: limits, now: .now) }
    }

    /// Gives back what `grant` set aside beyond its claim of `spoolBytes` (see
    /// ``UploadRateLimiter/shrink(_:toSpoolBytes:now:)``).
    func shrink(_ grant: inout UploadRateLimiter.Grant, toSpoolBytes spoolBytes: Int) {
        limiter.withLock { $0.shrink(&grant, toSpoolBytes: spoolBytes, now: .now) }
    }

    /// What a granted claim came to (see ``UploadRateLimiter/settle(_:_:now:)``).
    func settle(_ grant: UploadRateLimiter.Grant, _ spending: UploadRateLimiter.Spending) {
        limiter.withLock { $0.settle(grant, spending, now: .now) }
    }

    /// The receiver answered 429 or 503 without `Retry-After`; returns whether the rate answers it, or the caller
    /// should pause (see ``UploadRateLimiter/overloaded(sentAt:requestSpoolBytes:now:)``).
    func overloaded(sentAt: ContinuousClock.Instant, requestSpoolBytes: Int) -> Bool {
        limiter.withLock { $0.overloaded(sentAt: sentAt, requestSpoolBytes: requestSpoolBytes, now: .now) }
    }

    /// A reload's budget, from now on; ends an operator's override.
    public func update(_ budget: UploadRateBudget) {
        limiter.withLock { $0.update(budget, now: .now) }
        budgetChanged()
    }

    /// `logctl throttle`: a byte budget in place of the configured one, or none at all (`off` lifts the request
    /// budget too), until the next reload.
    public func setOverride(_ override: ThrottleOverride?) {
        limiter.withLock { $0.setOverride(override, now: .now) }
        budgetChanged()
    }

    /// Calls `observer` after every change of the budget (the shipper, so that classes waiting for the old
    /// budget are measured against the new one at once).
    func observeChanges(_ observer: @escaping @Sendable () -> Void) {
        changeObservers.withLock { $0.append(observer) }
    }

    private func budgetChanged() {
        for observer in changeObservers.withLock({ $0 }) { observer() }
    }

    /// The configured budget as last loaded.
    public var budget: UploadRateBudget { limiter.withLock { $0.budget } }

    /// The budget and the rate in force, for status and metrics.
    public var status: UploadRateStatus {
        limiter.withLock { limiter in
            UploadRateStatus(
                budgetBytesPerSecond: limiter.bytesPerSecond, isOverridden: limiter.override != nil,
                effectiveBytesPerSecond: limiter.effectiveBytesPerSecond(at: .now).map { Int($0.rounded()) },
                isHeldDownByReceiver: limiter.isHeldDownByReceiver(at: .now),
                requestsPerSecond: limiter.requestsPerSecond)
        }
    }
}

/// The link's budget and the rate in force.
public struct UploadRateStatus: Hashable, Sendable {
    /// The byte budget in force (`nil`: none).
    public var budgetBytesPerSecond: Int?
    /// Whether the budget is an operator's (`logctl throttle`) rather than the configuration's.
    public var isOverridden: Bool
    /// The rate bytes may go at now (`nil`: no limit): the budget, or less while the receiver is overloaded.
    public var effectiveBytesPerSecond: Int?
    /// Whether a receiver's overload (429 or 503) holds the rate down.
    public var isHeldDownByReceiver: Bool
    public var requestsPerSecond: Double?
}
