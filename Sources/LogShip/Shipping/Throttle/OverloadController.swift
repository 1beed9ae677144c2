/// How fast a receiver that says it is overloaded lets the link send.
///
/// A refusal tells what the receiver can take: the rate it *accepted* over the last seconds (the delivery-rate
/// estimate of BBR, the SRE book's "accepts"), or, when nothing was accepted lately to measure, half of what was
/// being sent. The limit goes a little under that estimate, then grows back along a cubic, as TCP CUBIC's window
/// does (RFC 9438): quickly at first, flattening as it nears the estimate, which it reaches after ``plateau``, then
/// faster and faster beyond it, probing for room. A fleet of hosts sharing one receiver so spends most of its time
/// near its shares; growing at a steady pace instead, a host with a small share is refused every few requests.
/// And room that hosts leave when their backlogs are done is found within seconds, not minutes. Only a refusal of
/// a request sent after the last decrease decreases again, so two requests in flight refused together count once
/// (TCP's one decrease per round trip).
///
/// The limit is lifted once it reaches the budget, or without one the rate that was being sent when the first
/// refusal came. What counts as an overload is not this type's to say: the retry policy tells a refusal that asks
/// for less from a failure here and there (``RetryPolicy``). It holds no clock: every call says what time it is.
struct OverloadController: Hashable, Sendable {
    /// The share of the estimate a decrease goes to.
    static let decreaseFactor = 0.8
    /// How long after a decrease the limit is back at the estimate, and how long it stays near it.
    static let plateau = Duration.seconds(6)
    /// How far back the accepted and sent rates are measured.
    static let measuringWindow = Duration.seconds(4)

    private struct Limit: Hashable, Sendable {
        /// Bytes per second the receiver was taken to accept at the last decrease.
        var estimate: Double
        /// When the limit was last decreased: the cubic's origin.
        var since: ContinuousClock.Instant
        /// Where the limit is lifted when there is no budget: the rate sent when the first refusal came.
        var liftAt: Double
        /// The least rate, as configured at the decrease.
        var floor: Double

        /// The curve from the decrease, never under the floor.
        func rate(at now: ContinuousClock.Instant) -> Double {
            max(floor, OverloadController.rate(estimate: estimate, after: now - since))
        }
    }

    /// The cubic a limit follows `elapsed` after a decrease to `estimate`: `decreaseFactor · estimate` at the
    /// decrease, flat at `estimate` a plateau later, growing ever faster beyond.
    static func rate(estimate: Double, after elapsed: Duration) -> Double {
        let fromPlateau = max(0, elapsed.seconds) / plateau.seconds - 1
        let span = estimate * (1 - decreaseFactor)
        return estimate + span * fromPlateau * fromPlateau * fromPlateau
    }

    /// What a refusal did to the limit.
    enum Answer: Hashable, Sendable {
        /// The limit came down.
        case decreased
        /// The request was sent before the last decrease, which answered it already.
        case answeredAlready
        /// The limit is at the floor: the caller pauses instead.
        case atFloor
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
        let grown = limit.rate(at: now)
        let top = budget ?? limit.liftAt
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
    mutating func overloaded(
        sentAt: ContinuousClock.Instant, now: ContinuousClock.Instant, budget: Double?, floor: Double
    ) -> Answer {
        if let limit, sentAt < limit.since { return .answeredAlready }
        let current = limit(at: now, budget: budget)
        if let current, current <= floor {
            // Refused at the floor: the caller pauses, and the limit grows again only from now.
            limit?.since = now
            return .atFloor
        }
        let measured = accepted.rate(at: now)
        let sending = current ?? sent.rate(at: now)
        let estimate = measured > 0 ? min(sending, measured) : sending / 2
        let liftAt = limit?.liftAt ?? max(sent.rate(at: now), floor)
        limit = Limit(estimate: max(floor, estimate), since: now, liftAt: liftAt, floor: floor)
        return .decreased
    }
}
