import DequeModule

/// What a failed request means for the link: send again at once, slow down, or pause everything, and for how long.
///
/// The one place the retry policy lives: delivery reports what happened (the status, `Retry-After`, whether the
/// remote answered at all), the shipper's machine asks this type what it means and carries it out. A change of
/// policy changes this type and its tests.
///
/// - A failure here and there is noise: the records go again at once, and nothing slows down. A remote that
///   answers is taken as down after ``pauseAfterFailures`` failures in a row that are also most of its last
///   answers (a remote failing from the start: its third), or after ``pauseAfterFailuresAlways`` in a row
///   whatever came before (one that fails after a long healthy run). At 20% random failures three in a row come by
///   chance about once in 125 requests, most of twenty or seven in a row about once in 80 000.
/// - A refused or timed-out connection, a name that does not resolve, a TLS failure: the remote is not there, an
///   outage; delivery pauses.
/// - `Retry-After` is the remote's word: delivery pauses that long (up to `upload.retry_after_max`), or the
///   backoff if longer, so a remote answering `Retry-After: 0` cannot be hammered.
/// - 429 is the receiver asking this client to slow down; 503 may be that or a backend down behind a balancer,
///   so it asks for less only while 503s are more than half of the last 50 answers, 20 at least (the SRE book's
///   client-side throttling with K = 2: a refusal share that noise does not reach; README says how rarely).
/// - A refused endpoint or credentials (or every part of a batch refused with an unclear 4xx): pause, and no
///   crash record probes it, since it does not come back by itself.
///
/// The pauses use one backoff: a uniformly random delay between half and all of `initial · 2^(failures-1)`,
/// capped at `maximum` ("equal jitter", so a fleet does not retry in step), counted in failures in a row of any
/// kind, of which those sent again at once count for at most two (the first pause is `4 · initial` at most however
/// many went before it); an answer of the remote resets it.
struct RetryPolicy: Sendable {
    /// The configured bounds (`upload.retry_initial`, `upload.retry_max`, `upload.retry_after_max`).
    struct Bounds: Hashable, Sendable {
        var initial: Duration
        var maximum: Duration
        var retryAfterMaximum: Duration

        /// - Precondition: `initial` is positive and `maximum` at least `initial` (the configuration loader
        ///   rejects anything else with the key named).
        init(initial: Duration, maximum: Duration, retryAfterMaximum: Duration) {
            precondition(initial > .zero && maximum >= initial)
            self.initial = initial
            self.maximum = maximum
            self.retryAfterMaximum = retryAfterMaximum
        }
    }

    /// What to do after a failed request.
    enum Reaction: Hashable, Sendable {
        /// Send the records again at once.
        case retry
        /// The receiver is overloaded: lower the link's rate.
        case slowDown
        /// Pause all delivery for this long.
        case pause(Duration, DeliveryPause.Cause, isAskedByRemote: Bool)
    }

    /// Failures in a row after which a remote that answers is taken as down, when they are most of its last
    /// answers.
    static let pauseAfterFailures = 3
    /// Failures in a row after which a remote that answers is taken as down, whatever its last answers were.
    static let pauseAfterFailuresAlways = 7
    /// The last answers looked at to tell failures that are most of what the remote answers from noise.
    static let answersWeighed = 20
    /// The last answers looked at to tell a sustained 503 from noise.
    static let busyAnswersWeighed = 50
    /// The least of those answers that must be in before 503s ask for less.
    static let leastBusyAnswersWeighed = 20

    var bounds: Bounds
    /// Failed requests since the remote last answered one with success (or a refusal of its records).
    private(set) var failuresInARow = 0
    /// Of ``failuresInARow``, those answered by sending the records again at once.
    private var retriedInARow = 0
    /// The last ``busyAnswersWeighed`` answers.
    private var recentAnswers = RecentAnswers(capacity: max(answersWeighed, busyAnswersWeighed))

    init(bounds: Bounds) {
        self.bounds = bounds
    }

    /// The remote answered a request: it took the records, or refused them for what they hold.
    mutating func answered() {
        failuresInARow = 0
        retriedInARow = 0
        recentAnswers.append(.taken)
    }

    /// A request failed with `error` (a fault of the link, not of its records); `jitter` in `0...1` picks the
    /// pause's length within the backoff's range.
    mutating func failed(_ error: UploadError, jitter: Double) -> Reaction {
        failuresInARow += 1
        let backoff = backoff(jitter: jitter)
        switch error.fault {
        case .endpointRefused, .unclear, .recordsRefused:
            return .pause(backoff, .endpointRefused, isAskedByRemote: false)
        case .remoteUnavailable:
            break
        }
        if let asked = error.retryAfter {
            let allowed = min(asked, bounds.retryAfterMaximum.seconds)
            return .pause(
                max(backoff, .seconds(allowed)), .remoteUnavailable, isAskedByRemote: .seconds(allowed) >= backoff)
        }
        guard let status = error.status else { return .pause(backoff, .remoteUnavailable, isAskedByRemote: false) }
        recentAnswers.append(status == 503 ? .busy : .failed)
        if status == 429
            || (status == 503
                && recentAnswers.isMostly(
                    [.busy], ofLast: Self.busyAnswersWeighed, atLeast: Self.leastBusyAnswersWeighed))
        {
            return .slowDown
        }
        if failuresInARow >= Self.pauseAfterFailuresAlways
            || (failuresInARow >= Self.pauseAfterFailures
                && recentAnswers.isMostly([.busy, .failed], ofLast: Self.answersWeighed, atLeast: 1))
        {
            return .pause(backoff, .remoteUnavailable, isAskedByRemote: false)
        }
        retriedInARow += 1
        return .retry
    }

    /// Counts a failure outside a request (the spool's, or a slowdown already at its floor) and returns the
    /// backoff's delay for it.
    mutating func failedElsewhere(jitter: Double) -> Duration {
        failuresInARow += 1
        return backoff(jitter: jitter)
    }

    /// The delay after the failures in a row so far; `jitter` in `0...1` picks it within the backoff's range.
    func backoff(jitter: Double) -> Duration {
        let counted = failuresInARow - max(0, retriedInARow - (Self.pauseAfterFailures - 1))
        let ceiling = Self.ceiling(afterFailures: counted, bounds)
        return min(ceiling, ceiling / 2 + ceiling / 2 * min(max(jitter, 0), 1))
    }

    /// The largest delay after `failures` failures in a row.
    static func ceiling(afterFailures failures: Int, _ bounds: Bounds) -> Duration {
        // In seconds as a Double, so that no product can overflow Duration's arithmetic.
        let doubled = bounds.initial.seconds * Double(1 << min(max(failures - 1, 0), 62))
        return doubled >= bounds.maximum.seconds ? bounds.maximum : .milliseconds(Int64((doubled * 1000).rounded()))
    }
}

/// What each of the last few answers was, oldest dropped first.
private struct RecentAnswers: Sendable {
    enum Answer: Sendable {
        /// The records were taken, or refused for what they hold.
        case taken
        /// A 503: busy, or a backend down behind a balancer.
        case busy
        /// Any other failure the remote answered with (a 5xx, 408, 429).
        case failed
    }

    /// The answers, oldest first.
    private var answers: Deque<Answer> = []
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    mutating func append(_ answer: Answer) {
        answers.append(answer)
        if answers.count > capacity { answers.removeFirst() }
    }

    /// Whether more than half of the last `count` answers, at least `least` of them, were of `kinds`.
    func isMostly(_ kinds: Set<Answer>, ofLast count: Int, atLeast least: Int) -> Bool {
        let weighed = answers.suffix(count)
        return weighed.count >= least && weighed.count { kinds.contains($0) } * 2 > weighed.count
    }
}
