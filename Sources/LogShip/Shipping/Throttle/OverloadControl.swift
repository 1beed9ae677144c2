/// How fast the receiver lets us send while it says it is overloaded: additive increase, multiplicative decrease.
///
/// A 429 or 503 without `Retry-After` halves the rate (never below the floor); each second without one adds back a
/// step, a twentieth of the rate it recovers towards, until that rate is reached and the control lets go. The rate
/// it recovers towards is the budget when there is one; without one, the rate measured when the first overload
/// was met, after which there is no limit again.
///
/// One overload is one decrease: a refusal of a request sent before the last decrease answers a rate already
/// halved, so two requests in flight refused together halve the rate once.
struct OverloadControl: Hashable, Sendable {
    private struct Decrease: Hashable, Sendable {
        var rate: Double
        var at: ContinuousClock.Instant
        /// What the rate recovers towards (bytes per second).
        var target: Double
    }

    /// The share of the target a healthy second adds back.
    static let stepsToRecover = 20.0

    private var decrease: Decrease?

    /// The rate the receiver's overload allows at `now`, in bytes per second; `nil` when it allows any (no
    /// overload, or recovered). Never above `budget`, the configured rate if any.
    func limit(at now: ContinuousClock.Instant, budget: Double?) -> Double? {
        guard let decrease else { return budget }
        let target = budget ?? decrease.target
        let healthySeconds = max(0, (now - decrease.at).seconds.rounded(.down))
        let recovered = decrease.rate + target / Self.stepsToRecover * healthySeconds
        return recovered >= target ? budget : recovered
    }

    /// Forgets an overload the rate has recovered from (a no-op otherwise).
    mutating func settle(at now: ContinuousClock.Instant, budget: Double?) {
        // `limit` gives back the budget itself once recovered, and something below it until then.
        guard decrease != nil, limit(at: now, budget: budget) == budget else { return }
        decrease = nil
    }

    /// The receiver said it is overloaded, answering a request sent at `sentAt`.
    ///
    /// - Parameters:
    ///   - rate: The rate to halve: the effective limit, or what was measured when there was none.
    ///   - budget: The configured rate, if any: what the rate recovers towards.
    ///   - floor: The least rate (`upload.rate.min_bytes_per_second`).
    /// - Returns: Whether the rate answers the overload: `true` when it was halved, or already was for this
    ///   request; `false` when it is at the floor already, and the caller should pause instead.
    mutating func overloaded(
        sentAt: ContinuousClock.Instant, now: ContinuousClock.Instant, rate: Double, budget: Double?, floor: Double
    ) -> Bool {
        if let decrease, sentAt < decrease.at { return true }
        guard rate > floor else {
            // Refused at the floor: the caller pauses, and no second of the pause counts as healthy.
            if decrease != nil { decrease?.at = now }
            return false
        }
        let target = budget ?? decrease?.target ?? rate
        decrease = Decrease(rate: max(floor, rate / 2), at: now, target: max(target, floor))
        return true
    }
}
