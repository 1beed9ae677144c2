import Synchronization

/// Capped exponential backoff with full jitter, shared by every operation of one shipper.
///
/// Failures against one remote are rarely independent, so consecutive failures of any batch lengthen the delay
/// and a success resets it.
public final class RetryBackoff: Sendable {
    private let initial: Duration
    private let maximum: Duration
    private let consecutiveFailures = Mutex(0)

    public init(initial: Duration, maximum: Duration) {
        precondition(initial > .zero && maximum >= initial)
        self.initial = initial
        self.maximum = maximum
    }

    /// Records a failure and returns how long to wait before the next attempt: a uniformly random delay up to
    /// `initial · 2^(failures-1)`, capped at `maximum` ("full jitter").
    public func nextDelay() -> Duration {
        let failures = consecutiveFailures.withLock { failures in
            failures += 1
            return failures
        }
        return ceiling(afterFailures: failures) * Double.random(in: 0...1)
    }

    /// The largest delay after `failures` consecutive failures.
    func ceiling(afterFailures failures: Int) -> Duration {
        min(initial * Double(1 << min(max(failures - 1, 0), 30)), maximum)
    }

    /// Records a success.
    public func reset() {
        consecutiveFailures.withLock { $0 = 0 }
    }
}
