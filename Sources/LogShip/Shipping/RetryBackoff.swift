import Synchronization

/// Capped exponential backoff with jitter, shared by every operation of one shipper.
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

    /// Records a failure and returns how long to wait before the next attempt: a random point in the upper half of
    /// `initial · 2^(failures-1)`, capped at `maximum`.
    public func nextDelay() -> Duration {
        let failures = consecutiveFailures.withLock { failures in
            failures += 1
            return failures
        }
        let ceiling = min(initial * Double(1 << min(failures - 1, 30)), maximum)
        return ceiling * Double.random(in: 0.5...1.0)
    }

    /// Records a success.
    public func reset() {
        consecutiveFailures.withLock { $0 = 0 }
    }
}
