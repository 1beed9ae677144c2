import Foundation
import Logging
import Synchronization

/// One delivery attempt: claim a batch of one class, post it, and settle every record of it in the spool.
///
/// What happens to a refused batch follows ``UploadError/Fault``:
/// - The remote is unavailable (transport error, timeout, 408, 429, 5xx): the batch goes back with a retry time
///   and delivery pauses until then: the remote's `Retry-After` (capped) or the shared backoff, whichever is
///   longer.
/// - The remote refuses the endpoint or the credentials (3xx, 401, 403, 404, …): the same, and the pause says so;
///   no record is dead-lettered for a wrong URL or token.
/// - The remote refuses records (400, 413, 415, 422): the batch is split in halves, sent in turn, until the refused
///   records are alone; only those go to the dead-letter table, so nothing behind a bad record waits for a human.
/// - Any other 4xx: the batch is sent again in parts; if the remote takes some, the refused parts are isolated
///   as above; if it refuses every part, it is treated like a refused endpoint (see ``UnclearRefusals``).
///
/// Every claimed record is settled (delivered, unclaimed for a retry, or dead-lettered) before this returns, also
/// when the operation is cancelled mid-request: settling runs in a task of its own, which the operation's
/// cancellation does not reach. Deliveries are handed to the spool, which commits their deletes in the background
/// (the records stay claimed until then); dead letters are committed before this returns; an unclaim writes
/// nothing, since a restart makes every record ready anyway. Should a settling write fail, the batch's unsettled
/// records are unclaimed and the report says so.
///
/// This is the work a `LogOperation` performs; keeping it apart from the operation keeps the queue mechanics and
/// the delivery rules separately testable.
public struct BatchDelivery: Sendable {
    let spool: any Spool
    let uploader: any Uploader
    let backoff: RetryBackoff
    let logger: Logger
    /// Told how long each request took (the metrics' latency histogram).
    let observeRequest: (@Sendable (Duration) -> Void)?
    /// The lanes operations take (``UploadLoops``); `nil` runs delivery on the global pool, over the uploader's
    /// first connection.
    let loops: UploadLoops?
    /// The link's budget: what each claim may take, and how fast an overloaded receiver lets us go.
    let throttle: UploadThrottle
    /// The batch limits and the `Retry-After` cap, which a reload may change for every operation at once.
    private let reloadable: ReloadableLimits
    private let unclearRefusals = UnclearRefusals()
    /// The last pause logged loudly, so that the same failure again is logged at debug level.
    let repeatedPauses = RepeatedPauses()

    /// - Parameters:
    ///   - loops: The upload lanes, one per loop the uploader has a connection on.
    ///   - observeRequest: Told how long each request took.
    init(
        spool: any Spool, uploader: any Uploader, limits: BatchLimits, backoff: RetryBackoff,
        retryAfterMaximum: Duration, throttle: UploadThrottle = UploadThrottle(budget: UploadRateBudget()),
        loops: UploadLoops? = nil, observeRequest: (@Sendable (Duration) -> Void)? = nil, logger: Logger
    ) {
        self.spool = spool
        self.uploader = uploader
        reloadable = ReloadableLimits(limits: limits, retryAfterMaximum: retryAfterMaximum)
        self.backoff = backoff
        self.throttle = throttle
        self.loops = loops
        self.observeRequest = observeRequest
        self.logger = logger
    }

    /// How large one request may be.
    public var limits: BatchLimits { reloadable.values.withLock { $0.limits } }

    /// The longest pause a remote's `Retry-After` may impose (`upload.retry_after_max`).
    public var retryAfterMaximum: Duration { reloadable.values.withLock { $0.retryAfterMaximum } }

    /// Uses new limits and cap from the next claim on (a reload).
    public func update(limits: BatchLimits, retryAfterMaximum: Duration) {
        reloadable.values.withLock { $0 = (limits, retryAfterMaximum) }
    }

    /// The limits and cap shared by every copy of one delivery, so that an update reaches operations already created.
    private final class ReloadableLimits: Sendable {
        let values: Mutex<(limits: BatchLimits, retryAfterMaximum: Duration)>

        init(limits: BatchLimits, retryAfterMaximum: Duration) {
            values = Mutex((limits, retryAfterMaximum))
        }
    }

    /// Claims and sends the next batch of `priority`, as much of it as the link's budget allows now, unless the
    /// class must wait for the budget first (``DeliveryOutcome/throttled(until:)``).
    ///
    /// - Parameters:
    ///   - lane: The upload lane the calling operation holds: its requests go out on that lane's connection, and
    ///     settling writes run on its loop. `nil` outside an operation.
    ///   - claimed: Called right after the claim, before any upload, with whether records of the class were
    ///     left behind, so the class's next batch can be waiting for the other slot.
    /// - Important: A claimed batch is settled before this returns. When a settling write fails, the batch's
    ///   unsettled records are pending again and the report says until when the class should wait
    ///   (``DeliveryReport/spoolFailedUntil``).
    /// - Throws: Only errors of the claim (the spool), and `CancellationError` when cancelled before claiming.
    func deliverNext(
        _ priority: PriorityClass, on lane: UploadLane? = nil, claimed: @Sendable (_ moreLeft: Bool) -> Void = { _ in }
    ) async throws -> DeliveryOutcome {
        let (claim, grant): (ClaimResult, UploadRateLimiter.Grant)
        switch try await claimWithinBudget(priority) {
        case .wait(let until): return .throttled(until: until)
        case .claimed(let result, let granted): (claim, grant) = (result, granted)
        }
        switch claim {
        case .empty:
            claimed(false)
            return .nothingToSend
        case .waiting(let until):
            claimed(false)
            return .waiting(until: until)
        case .batch(let batch, let more):
            claimed(more)
            var attempt = Attempt(lane: lane)
            defer { throttle.settle(grant, attempt.spending) }
            do {
                try await deliver(batch, &attempt)
                try await deadLetterRefused(&attempt)
            } catch {
                // Writes nothing: fails only once the spool is closed, when no claim matters any more.
                try? await spool.settle(batch, .retry(at: Date()))
                attempt.report.spoolFailedUntil = Date().addingTimeInterval(backoff.nextDelay().seconds)
                var metadata = metadata(batch)
                metadata["logship.error"] = "\(error)"
                logger.error("could not settle a batch in the spool; its records are pending again", metadata: metadata)
            }
            return .attempted(attempt.report)
        }
    }

    /// What one claimed batch has come to so far, across the requests of its isolation.
    struct Attempt {
        /// The lane the batch's requests and settling writes go on.
        let lane: UploadLane?
        var report = DeliveryReport()
        /// Whether the remote accepted any part of the batch.
        var acceptedAny = false
        /// Lone records the remote refused for what they hold; dead-lettered once the whole batch has been tried.
        var refused: [(batch: Batch, error: UploadError)] = []
        /// Whether the operation was cancelled mid-request; what was not yet sent goes back ready at once.
        var isCancelled = false
        /// What the requests spent of the link's budget.
        var spending = UploadRateLimiter.Spending()
        /// When the last request was sent.
        var lastSentAt = ContinuousClock.now
    }

    /// What became of one request.
    private enum SendResult {
        case accepted
        case refused(UploadError)
        /// Not sent: the attempt was paused or cancelled before, and the records went back.
        case notSent
    }

    private func deliver(_ batch: Batch, _ attempt: inout Attempt) async throws {
        guard case .refused(let error) = try await send(batch, &attempt) else { return }
        try await handle(error, for: batch, &attempt)
    }

    /// Sends one request for `batch`, settling what the outcome settles; once the attempt is paused or cancelled,
    /// sends nothing and puts the records back.
    private func send(_ batch: Batch, _ attempt: inout Attempt) async throws -> SendResult {
        if attempt.isCancelled {
            try await putBack(batch, attempt)
            return .notSent
        }
        if attempt.report.pause != nil {
            // The remote stopped taking records: the rest waits with everything else, behind the shipper's pause.
            try await putBack(batch, attempt)
            return .notSent
        }
        attempt.lastSentAt = ContinuousClock.now
        let sent: Result<Int, any Error>
        do {
            sent = .success(try await uploader.upload(
                Payload(lines: batch.records.map(\.line), batchNumber: batch.number, lane: attempt.lane?.index ?? 0)))
        } catch let failure as UploadError where failure.isUnencodable {
            // Nothing went out: no request and nothing spent; the records are refused as a remote refuses them.
            return .refused(failure)
        } catch {
            sent = .failure(error)
        }
        attempt.report.counts.requests += 1
        attempt.spending.requests += 1
        observeRequest?(ContinuousClock.now - attempt.lastSentAt)
        switch sent {
        case .success(let bodyBytes):
            attempt.spending.sentBytes += bodyBytes
            attempt.spending.sentSpoolBytes += batch.spoolBytes
        case .failure(is CancellationError):
            attempt.isCancelled = true
            try await putBack(batch, attempt)
            logger.debug("upload cancelled; batch kept", metadata: metadata(batch))
            return .notSent
        case .failure(let error):
            let failure = error as? UploadError ?? .transport("\(error)")
            attempt.report.counts.failedRequests += 1
            // A request the remote answered was sent whole; one that never connected spent nothing.
            if failure.status != nil { attempt.spending.failedSpoolBytes += batch.spoolBytes }
            attempt.report.lastError = LastError(reason: failure.description, at: Date())
            // The library's own words only here: what the failure's description says is enough above debug.
            var metadata = metadata(batch)
            metadata["logship.upload.error"] = "\(failure)"
            if let detail = failure.detail { metadata["logship.upload.error.detail"] = "\(detail)" }
            logger.debug("upload request failed", metadata: metadata)
            return .refused(failure)
        }
        backoff.reset()
        repeatedPauses.remoteAccepted()
        attempt.report.lastAcceptedAt = Date()
        // Not awaited: the slot is free for the next request while the spool commits the delete.
        try await spool.settle(batch, .delivered)
        attempt.report.counts.delivered += batch.records.count
        attempt.acceptedAny = true
        return .accepted
    }

    /// Handles a refusal of `batch` according to what the failure says about it.
    private func handle(_ error: UploadError, for batch: Batch, _ attempt: inout Attempt) async throws {
        switch error.fault {
        case .remoteUnavailable where error.isOverload && error.retryAfter == nil
            && throttle.overloaded(sentAt: attempt.lastSentAt, requestSpoolBytes: batch.spoolBytes):
            try await slowDown(for: error, puttingBack: batch, &attempt)
        case .remoteUnavailable, .endpointRefused:
            attempt.report.counts.retriedRequests += 1
            try await pauseDelivery(
                for: error, cause: error.fault == .endpointRefused ? .endpointRefused : .remoteUnavailable,
                puttingBack: [batch], &attempt)
        case .unclear where !attempt.acceptedAny:
            try await probe(batch, refusedWith: error, &attempt)
        case .recordsRefused, .unclear:
            if !error.isUnencodable { attempt.report.counts.rejectedRequests += 1 }
            guard batch.records.count > 1 else {
                attempt.refused.append((batch, error))
                return
            }
            let (first, second) = batch.halves()
            try await deliver(first, &attempt)
            try await deliver(second, &attempt)
        }
    }

    /// An unclear refusal while the remote has accepted nothing of the batch: the records, or everything?
    ///
    /// The batch is sent again in parts: halves, or, each time the same batch was found refused whole before,
    /// twice as many parts, so that a batch whose bad records sit in every part is not judged the same way
    /// forever. If the remote takes any part, the refused parts are isolated as refusals of records. If it
    /// refuses every part, nothing is dead-lettered and delivery pauses.
    ///
    /// The batch's own request counts as rejected when the remote takes a part (the records were at fault), and
    /// as retried, with the parts it refused, when it takes none.
    private func probe(_ batch: Batch, refusedWith error: UploadError, _ attempt: inout Attempt) async throws {
        var refusedParts: [(batch: Batch, error: UploadError)] = []
        if batch.records.count > 1 {
            for part in batch.parts(1 << unclearRefusals.depth(of: batch)) {
                guard case .refused(let partError) = try await send(part, &attempt) else { continue }
                if partError.fault == .remoteUnavailable || partError.fault == .endpointRefused {
                    try await handle(partError, for: part, &attempt)
                } else {
                    refusedParts.append((part, partError))
                }
            }
        }
        if attempt.acceptedAny {
            attempt.report.counts.rejectedRequests += 1
            unclearRefusals.forget(batch)
            for (part, partError) in refusedParts {
                try await handle(partError, for: part, &attempt)
            }
            return
        }
        // Nothing taken: the refusals were the endpoint's, and the refused records go back (a lone record's batch
        // was not split).
        attempt.report.counts.retriedRequests += 1 + refusedParts.count
        let goingBack = batch.records.count > 1 ? refusedParts.map(\.batch) : [batch]
        if attempt.report.pause == nil && !attempt.isCancelled {
            unclearRefusals.remember(batch)
            try await pauseDelivery(for: error, cause: .endpointRefused, puttingBack: goingBack, &attempt)
        } else {
            for part in goingBack {
                try await putBack(part, attempt)
            }
        }
    }

    /// Runs a settling write in a task of its own, on the batch's lane: it must complete even when the operation
    /// was cancelled (GRDB does not start a write in a cancelled task), or the batch would stay claimed until a
    /// restart.
    func settle(on lane: UploadLane?, _ write: @escaping @Sendable () async throws -> Void) async throws {
        try await Task(executorPreference: lane?.executor) { try await write() }.value
    }

    func metadata(_ batch: Batch) -> Logger.Metadata {
        [
            "logship.batch.priority": "\(batch.priority)",
            "logship.batch.records": "\(batch.records.count)",
            "logship.batch.first": "\(batch.records.first?.sequence ?? 0)",
        ]
    }
}
