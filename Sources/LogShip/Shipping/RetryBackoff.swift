import Synchronization

/// Capped exponential backoff with jitter, shared by every operation of one shipper.
///
/// Failures against one remote are rarely independent, so consecutive failures of any batch lengthen the delay
/// and a success resets it.
public final class RetryBackoff: Sendable {
    private let bounds: Mutex<(initial: Duration, maximum: Duration)>
    private let consecutiveFailures = Mutex(0)

    /// - Precondition: `initial` is positive and `maximum` is at least `initial` (the configuration loader
    ///   rejects anything else with the key named).
    public init(initial: Duration, maximum: Duration) {
        precondition(initial > .zero && maximum >= initial)
        bounds = Mutex((initial, maximum))
    }

    /// Uses new bounds from the next delay on (a reload).
    public func update(initial: Duration, maximum: Duration) {
        precondition(initial > .zero && maximum >= initial)
        bounds.withLock { $0 = (initial, maximum) }
    }

    /// Records a failure and returns how long to wait before the next attempt: a uniformly random delay between
    /// half and all of `initial · 2^(failures-1)`, capped at `maximum` ("equal jitter": spread out, so a fleet
    /// does not retry in step, yet never so short that a refusing remote is hammered).
    public func nextDelay() -> Duration {
        let failures = consecutiveFailures.withLock { failures in
            failures += 1
            return failures
        }
        let ceiling = ceiling(afterFailures: failures)
        return ceiling / 2 + ceiling / 2 * Double.random(in: 0...1)
    }

    /// The largest delay after `failures` consecutive failures.
    func ceiling(afterFailures failures: Int) -> Duration {
        let (initial, maximum) = bounds.withLock { $0 }
        // In seconds as a Double, so that no product can overflow Duration's arithmetic.
        let doubled = initial.seconds * Double(1 << min(max(failures - 1, 0), 62))
        return doubled >= maximum.seconds ? maximum : .milliseconds(Int64((doubled * 1000).rounded()))
    }

    /// Records a success.
    public func reset() {
        consecutiveFailures.withLock { $0 = 0 }
    }
}
