/// The link's budget (`upload.rate.*`) and the receiver's overload, without a clock or a lock: whether a class
/// may claim now and how much, what the requests spent, how fast an overloaded receiver lets us go. The shipper's
/// machine holds it and tells it the time.
///
/// The rate in force sizes claims, whether the budget sets it or a receiver's overload holds it lower: a class
/// waits for a request's worth of it and claims what the tokens allow. Under a receiver's limit that keeps
/// requests small enough for the receiver to be heard often: a host whose share is 400 lines a second, sending
/// batches of 1 000, would hear from it every two and a half seconds, and each refusal would be a large part of
/// what it sent. Noise sets no limit (``RetryPolicy``), so it never makes batches smaller.
///
/// Spending is counted in request body bytes as sent, but a claim is sized in the spool's bytes; the two are
/// related by the ratio of the last requests (``wireBytesPerSpoolByte``: above 1 for OTLP's JSON, far below for
/// compressed bodies), and what was sent is debited exactly once it is known, so an estimate that was off moves
/// one request, never the average.
struct UploadRateLimiter: Sendable {
    /// How much of the rate a class waits for before it claims while a backlog waits: this long of it. Requests
    /// of about that size keep every window of a few seconds close to the budget; after a quiet spell the
    /// bucket holds more, and the burst goes at once.
    static let requestShare: Duration = .milliseconds(250)
    /// How long a more urgent class's registered wait keeps a less urgent class back past its end, so that
    /// the urgent class's timer and operation can get there first; one that has not claimed by then is no
    /// longer waiting.
    static let urgentGrace: Duration = .milliseconds(50)

    /// A claim the limiter let through: the limits it may claim within, and what was set aside for it.
    struct Grant: Hashable, Sendable {
        var limits: BatchLimits
        var reservedBytes = 0.0
        var reservedRequests = 0.0
    }

    enum Admission: Hashable, Sendable {
        /// Claim within the grant's limits, and charge it with what the request spent when it is done.
        case go(Grant)
        /// Come back after this long.
        case wait(Duration)
    }

    private(set) var budget: UploadRateBudget
    /// What `logctl throttle` set, until the next reload.
    private(set) var override: ThrottleOverride?
    private var bytes: TokenBucket?
    private var requests: TokenBucket?
    private var overload = OverloadController()
    /// Request body bytes per spooled byte, over the last requests.
    private(set) var wireBytesPerSpoolByte = 1.0
    /// Classes told to wait, and when they should come back: a less urgent class does not take the tokens they
    /// wait for.
    private var waiting: [PriorityClass: ContinuousClock.Instant] = [:]

    init(budget: UploadRateBudget, now: ContinuousClock.Instant) {
        self.budget = budget
        refresh(now: now)
    }

    /// The byte budget in force: the operator's override, else the configuration's.
    var bytesPerSecond: Int? {
        switch override {
        case .bytesPerSecond(let rate): rate
        case .off: nil
        case nil: budget.bytesPerSecond
        }
    }

    /// The request budget in force: the configuration's, unless an operator lifted every budget (`logctl throttle
    /// off`); an operator's byte budget keeps it.
    var requestsPerSecond: Double? {
        override == .off ? nil : budget.requestsPerSecond
    }

    /// The rate bytes may go at now: the budget, or less while a receiver's overload holds it down; `nil` is
    /// no limit.
    func effectiveBytesPerSecond(at now: ContinuousClock.Instant) -> Double? {
        overload.limit(at: now, budget: bytesPerSecond.map(Double.init))
    }

    /// Whether a receiver's overload holds the rate below the budget at `now`.
    func isHeldDownByReceiver(at now: ContinuousClock.Instant) -> Bool {
        let budget = bytesPerSecond.map(Double.init)
        return overload.limit(at: now, budget: budget) != budget
    }

    // MARK: Claims

    /// Whether `priorityClass` may claim at `now`, and within which limits.
    ///
    /// An exempt class always may. Another waits until the rate in force holds a request's worth (the least of
    /// the burst, ``requestShare`` of the rate, and a full batch) and the request budget a request, and until
    /// every more urgent class told to wait has had its turn; then it may claim everything the tokens allow, at
    /// least one record.
    mutating func admit(
        _ priorityClass: PriorityClass, within limits: BatchLimits, now: ContinuousClock.Instant
    ) -> Admission {
        refresh(now: now)
        guard !budget.exempt.contains(priorityClass) else { return .go(Grant(limits: limits)) }
        var wait = Duration.zero
        for (urgent, due) in waiting where urgent > priorityClass {
            if due + Self.urgentGrace < now {
                waiting[urgent] = nil
            } else {
                wait = max(wait, due + Self.urgentGrace - now)
            }
        }
        if let bytes {
            let quantum = max(1, min(bytes.capacity, bytes.rate * Self.requestShare.seconds,
                                     Double(limits.maxBytes) * wireBytesPerSpoolByte))
            wait = max(wait, bytes.waitUntilHolding(quantum, now: now))
        }
        if let requests {
            wait = max(wait, requests.waitUntilHolding(1, now: now))
        }
        guard wait <= .zero else {
            waiting[priorityClass] = now + wait
            return .wait(wait)
        }
        waiting[priorityClass] = nil
        var grant = Grant(limits: limits)
        if var bucket = bytes {
            let allowed = min(bucket.tokens(at: now), bucket.capacity)
            grant.limits.maxBytes = min(limits.maxBytes, max(1, Int(allowed / wireBytesPerSpoolByte)))
            grant.reservedBytes = allowed
            bucket.debit(allowed, now: now)
            bytes = bucket
        }
        if requests != nil {
            grant.reservedRequests = 1
            requests?.debit(1, now: now)
        }
        return .go(grant)
    }

    /// Gives back what a grant set aside beyond what its claim took, `spoolBytes` of the spool, so that the
    /// other slot and the other classes need not wait for the request to end to use it. Returns whether it gave
    /// anything back.
    @discardableResult
    mutating func shrink(_ grant: inout Grant, toSpoolBytes spoolBytes: Int, now: ContinuousClock.Instant) -> Bool {
        let needed = Double(spoolBytes) * wireBytesPerSpoolByte
        guard grant.reservedBytes > needed else { return false }
        bytes?.credit(grant.reservedBytes - needed, now: now)
        grant.reservedBytes = needed
        return true
    }

    /// What one claimed batch's requests spent.
    struct Spending: Hashable, Sendable {
        var requests = 0
        /// Body bytes, as sent, of the requests the remote answered with success.
        var sentBytes = 0
        /// The spooled bytes those requests carried.
        var sentSpoolBytes = 0
        /// The spooled bytes of requests that failed, whose body size is estimated.
        var failedSpoolBytes = 0
    }

    /// What a granted claim came to: its requests, and what they carried.
    mutating func charge(_ grant: Grant, _ spending: Spending, now: ContinuousClock.Instant) {
        refresh(now: now)
        if spending.sentBytes > 0 && spending.sentSpoolBytes > 0 {
            // Weighted towards the newest requests, so that a change of format or compression shows within a few.
            wireBytesPerSpoolByte = 0.7 * wireBytesPerSpoolByte
                + 0.3 * Double(spending.sentBytes) / Double(spending.sentSpoolBytes)
        }
        let sent = Double(spending.sentBytes)
        let refused = Double(spending.failedSpoolBytes) * wireBytesPerSpoolByte
        overload.answered(acceptedBytes: sent, refusedBytes: refused, at: now)
        // The receiver's limit counts what it took: there a failed request spends what its grant set aside and no
        // more (a refusal lowers the limit instead, and a whole batch refused after a decrease would otherwise
        // hold the next request back for seconds of the lower rate). A budget counts every byte that left.
        let spent = sent + (isHeldDownByReceiver(at: now) ? min(refused, max(0, grant.reservedBytes - sent)) : refused)
        let owed = spent - grant.reservedBytes
        if owed >= 0 { bytes?.debit(owed, now: now) } else { bytes?.credit(-owed, now: now) }
        let owedRequests = Double(spending.requests) - grant.reservedRequests
        if owedRequests >= 0 {
            requests?.debit(owedRequests, now: now)
        } else {
            requests?.credit(-owedRequests, now: now)
        }
    }

    // MARK: The receiver's overload

    /// The receiver refused a request sent at `sentAt` as overloaded (``RetryPolicy`` says which refusals are).
    /// At `.atFloor` the caller pauses instead.
    mutating func overloaded(
        sentAt: ContinuousClock.Instant, now: ContinuousClock.Instant
    ) -> OverloadController.Answer {
        refresh(now: now)
        // The floor is never above the budget in force, an operator's lower one included.
        let floor = Double(min(budget.minimumBytesPerSecond, bytesPerSecond ?? .max))
        let answer = overload.overloaded(
            sentAt: sentAt, now: now, budget: bytesPerSecond.map(Double.init), floor: floor)
        refresh(now: now)
        if answer == .decreased {
            // What the bucket held was filled at the old rate: the next request waits for the new one.
            bytes?.empty(now: now)
        }
        return answer
    }

    // MARK: Changes

    /// A reload's budget, from `now` on; an operator's override ends with it.
    mutating func update(_ budget: UploadRateBudget, now: ContinuousClock.Instant) {
        self.budget = budget
        override = nil
        refresh(now: now)
    }

    /// `logctl throttle`: a byte budget in place of the configured one, or none at all (`off`, which lifts the
    /// request budget too), until the next reload.
    mutating func setOverride(_ override: ThrottleOverride?, now: ContinuousClock.Instant) {
        self.override = override
        refresh(now: now)
    }

    /// Brings the buckets to the rates in force at `now`: the byte rate follows the budget and the overload,
    /// the request rate the budget. A bucket that appears starts empty.
    private mutating func refresh(now: ContinuousClock.Instant) {
        overload.liftIfGrownOut(at: now, budget: bytesPerSecond.map(Double.init))
        bytes = Self.bucket(bytes, rate: effectiveBytesPerSecond(at: now), burstSeconds: budget.burstSeconds, now: now)
        requests = Self.bucket(requests, rate: requestsPerSecond, burstSeconds: budget.burstSeconds, now: now)
    }

    private static func bucket(
        _ bucket: TokenBucket?, rate: Double?, burstSeconds: Double, now: ContinuousClock.Instant
    ) -> TokenBucket? {
        guard let rate, rate > 0 else { return nil }
        let capacity = max(1, rate * burstSeconds)
        guard var bucket else { return TokenBucket(rate: rate, capacity: capacity, now: now) }
        if bucket.rate != rate || bucket.capacity != capacity {
            bucket.change(rate: rate, capacity: capacity, now: now)
        }
        return bucket
    }
}
