/// How fast a receiver that says it is overloaded lets the link send.
///
/// A decrease brings the limit a little under what the receiver *accepted* over the last seconds, not under what
/// was sent: a receiver that takes 20 000 lines a second and refuses the rest gets a limit just under 20 000 at
/// its first refusal, where halving what was sent takes several refusals to get there and then undershoots (the
/// delivery-rate estimate of BBR, and the SRE book's "accepts" in place of requests). Only when nothing was
/// accepted lately, so that there is nothing to measure, is the limit halved. Only a refusal of a request sent
/// after the last decrease decreases again, so two requests in flight refused together count once (TCP's one
/// decrease per round trip).
///
/// The limit then grows back linearly: from a measured capacity by a twentieth of that capacity a second, probing
/// gently near where the receiver gave way; from a halving by a twentieth of the limit's ceiling a second. It is
/// lifted once it reaches the budget, or without one the rate that was being sent when the first refusal came.
///
/// What counts as an overload is not this type's to say: the retry policy tells a refusal that asks for less
/// from a failure here and there (``RetryPolicy``). It holds no clock: every call says what time it is.
struct OverloadController: Hashable, Sendable {
    /// The share of the accepted rate a decrease goes to.
    static let decreaseFactor = 0.85
    /// The share of its base (the capacity measured, or the ceiling) the limit gains each second after a decrease.
    static let growthPerSecond = 0.05
    /// How far back the accepted and sent rates are measured.
    static let measuringWindow = Duration.seconds(4)

    private struct Limit: Hashable, Sendable {
        /// Bytes per second at `since`.
        var rate: Double
        var since: ContinuousClock.Instant
        /// Bytes per second the limit gains each second.
        var growth: Double
        /// Where the limit is lifted when there is no budget: the rate sent when the first refusal came.
        var liftAt: Double
    }

    private var limit: Limit?
    private var accepted = RecentSpending(window: measuringWindow)
    private var sent = RecentSpending(window: measuringWindow)

    /// A request was answered at `now`: `acceptedBytes` of it taken, `refusedBytes` not.
    mutating func answered(acceptedBytes: Double, refusedBytes: Double, at now: ContinuousClock.Instant) {
        if acceptedBytes > 0 { accepted.add(acceptedBytes, at: now) }
        if acceptedBytes + refusedBytes > 0 { sent.add(acceptedBytes + refusedBytes, at: now) }
    }

    /// The rate the receiver allows at `now`, in bytes per second, never above `budget`; `nil` when it allows any.
    func limit(at now: ContinuousClock.Instant, budget: Double?) -> Double? {
        guard let limit else { return budget }
        let top = budget ?? limit.liftAt
        let grown = limit.rate + limit.growth * max(0, (now - limit.since).seconds)
        return grown >= top ? budget : grown
    }

    /// Forgets a decrease the limit has grown out of (a no-op otherwise).
    mutating func liftIfGrownOut(at now: ContinuousClock.Instant, budget: Double?) {
        guard limit != nil, limit(at: now, budget: budget) == budget else { return }
        limit = nil
    }

    /// The receiver refused, as overloaded, a request sent at `sentAt`.
    ///
    /// - Parameters:
    ///   - budget: The configured rate, if any: the limit never goes above it.
    ///   - floor: The least rate (`upload.rate.min_bytes_per_second`).
    /// - Returns: Whether the limit answers the refusal: `true` when it decreased, or already had for this round
    ///   trip; `false` when it is at the floor already, and the caller should pause instead.
    mutating func overloaded(
        sentAt: ContinuousClock.Instant, now: ContinuousClock.Instant, budget: Double?, floor: Double
    ) -> Bool {
        if let limit, sentAt < limit.since { return true }
        let current = limit(at: now, budget: budget)
        if let current, current <= floor {
            // Refused at the floor: the caller pauses, and the limit grows again only from now.
            limit?.since = now
            return false
        }
        let measured = accepted.rate(at: now)
        let sending = current ?? sent.rate(at: now)
        let decreased: Double
        let growth: Double
        let liftAt = limit?.liftAt ?? max(sent.rate(at: now), floor)
        if measured > 0 {
            decreased = max(floor, Self.decreaseFactor * min(sending, measured))
            growth = Self.growthPerSecond * decreased / Self.decreaseFactor
        } else {
            decreased = max(floor, sending / 2)
            growth = Self.growthPerSecond * (budget ?? max(liftAt, decreased))
        }
        limit = Limit(rate: decreased, since: now, growth: growth, liftAt: liftAt)
        return true
    }
}
