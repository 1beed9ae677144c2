/// A token bucket: tokens flow in at `rate` per second up to `capacity`; a debit may take the level below zero,
/// a debt the inflow repays before anything else may be spent.
///
/// It holds no clock: every call says what time it is, so that it is the same in a test with a manual clock and in
/// the daemon with `ContinuousClock`.
package struct TokenBucket: Hashable, Sendable {
    /// Tokens added per second; positive.
    package private(set) var rate: Double
    /// The most tokens the bucket holds: what may be spent at once after a quiet spell.
    package private(set) var capacity: Double
    /// The level at `updatedAt`.
    private var level: Double
    private var updatedAt: ContinuousClock.Instant

    /// - Parameters:
    ///   - rate: Tokens per second.
    ///   - capacity: The most it holds; at least one token.
    ///   - level: What it holds at `now`; empty by default, so that a start spends no more than the rate allows.
    package init(rate: Double, capacity: Double, level: Double = 0, now: ContinuousClock.Instant) {
        precondition(rate > 0 && capacity >= 1)
        self.rate = rate
        self.capacity = capacity
        self.level = min(level, capacity)
        updatedAt = now
    }

    /// The tokens held at `now` (negative while a debt is repaid).
    package func tokens(at now: ContinuousClock.Instant) -> Double {
        guard now > updatedAt else { return level }
        return min(capacity, level + rate * (now - updatedAt).seconds)
    }

    /// Takes `amount` tokens, whether or not they are there.
    package mutating func debit(_ amount: Double, now: ContinuousClock.Instant) {
        advance(to: now)
        level -= amount
    }

    /// Gives back `amount` tokens, up to the capacity (a reservation that was not spent).
    package mutating func credit(_ amount: Double, now: ContinuousClock.Instant) {
        advance(to: now)
        level = min(capacity, level + amount)
    }

    /// How long from `now` until the bucket holds `amount` tokens; zero when it already does. An `amount` above
    /// the capacity is never held, so it is waited for as the capacity.
    package func waitUntilHolding(_ amount: Double, now: ContinuousClock.Instant) -> Duration {
        let missing = min(amount, capacity) - tokens(at: now)
        return missing > 0 ? .seconds(missing / rate) : .zero
    }

    /// Spends whatever the bucket holds, keeping a debt as it is.
    package mutating func empty(now: ContinuousClock.Instant) {
        advance(to: now)
        level = min(level, 0)
    }

    /// Changes the rate and capacity from `now` on, keeping what the bucket holds (cut to the new capacity).
    package mutating func change(rate: Double, capacity: Double, now: ContinuousClock.Instant) {
        precondition(rate > 0 && capacity >= 1)
        advance(to: now)
        self.rate = rate
        self.capacity = capacity
        level = min(level, capacity)
    }

    private mutating func advance(to now: ContinuousClock.Instant) {
        level = tokens(at: now)
        if now > updatedAt { updatedAt = now }
    }
}
