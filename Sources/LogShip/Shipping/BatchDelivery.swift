import Foundation
import Logging

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
/// - Any other 4xx: split the same way, but the refused records are dead-lettered only if the remote accepted
///   another part of the batch. A remote that refuses two lone records and accepts nothing refuses everything, and
///   delivery pauses instead.
///
/// Every claimed record is settled (acknowledged, released or dead-lettered) before this returns, also when the
/// operation is cancelled mid-request: settling runs in a task of its own, which the operation's cancellation
/// does not reach. Should a settling write fail, the batch's unsettled records are returned to pending and the
/// error is thrown.
///
/// This is the work a `LogOperation` performs; keeping it apart from the operation keeps the queue mechanics and
/// the delivery rules separately testable.
public struct BatchDelivery: Sendable {
    public var spool: any Spool
    public var uploader: any Uploader
    public var limits: BatchLimits
    public var backoff: RetryBackoff
    /// The longest pause a remote's `Retry-After` may impose (`upload.retry_after_max`).
    public var retryAfterMaximum: Duration
    public var logger: Logger

    public init(
        spool: any Spool, uploader: any Uploader, limits: BatchLimits, backoff: RetryBackoff,
        retryAfterMaximum: Duration, logger: Logger
    ) {
        self.spool = spool
        self.uploader = uploader
        self.limits = limits
        self.backoff = backoff
        self.retryAfterMaximum = retryAfterMaximum
        self.logger = logger
    }

    /// Claims and sends the next batch of `priority`.
    ///
    /// - Parameters:
    ///   - claimed: Called right after the claim, before any upload, with whether ready records of the class were
    ///     left behind, so the class's next batch can be waiting for the other slot.
    /// - Important: A claimed batch is settled before this returns, whether it returns or throws.
    /// - Throws: Spool errors only (the claim, or a settling write; in the latter case the records are pending
    ///   again), and `CancellationError` when cancelled before anything was claimed.
    public func deliverNext(
        _ priority: PriorityClass, claimed: @Sendable (_ moreReady: Bool) -> Void = { _ in }
    ) async throws -> DeliveryOutcome {
        switch try await spool.claim(priority, limits: limits) {
        case .empty:
            claimed(false)
            return .nothingToSend
        case .waiting(let until):
            claimed(false)
            return .waiting(until: until)
        case .batch(let batch, let more):
            claimed(more)
            var attempt = Attempt()
            do {
                try await deliver(batch, &attempt)
                try await settleRefused(&attempt)
            } catch {
                await spool.returnToPending(batch)
                var metadata = metadata(batch)
                metadata["logship.error"] = "\(error)"
                logger.error("could not settle a batch in the spool; its records are pending again", metadata: metadata)
                throw error
            }
            return .attempted(attempt.report)
        }
    }

    /// What one claimed batch has come to so far, across the requests of its isolation.
    private struct Attempt {
        var report = DeliveryReport()
        /// Whether the remote accepted any part of the batch.
        var acceptedAny = false
        /// Lone records the remote refused, each with its refusal; settled once the whole batch has been tried.
        var refused: [(batch: Batch, error: UploadError)] = []
        /// Whether the operation was cancelled mid-request; what was not yet sent goes back ready at once.
        var isCancelled = false
    }

    private func deliver(_ batch: Batch, _ attempt: inout Attempt) async throws {
        if attempt.isCancelled {
            try await settle { try await spool.release(batch, retryAt: Date()) }
            return
        }
        if let pause = attempt.report.pause {
            // The remote stopped taking records: the rest waits with everything else.
            try await settle { try await spool.release(batch, retryAt: pause.until) }
            return
        }
        attempt.report.requests += 1
        do {
            try await uploader.upload(
                Payload(body: Self.body(of: batch), recordCount: batch.records.count, batchNumber: batch.number))
        } catch is CancellationError {
            attempt.isCancelled = true
            try await settle { try await spool.release(batch, retryAt: Date()) }
            logger.debug("upload cancelled; batch kept", metadata: metadata(batch))
            return
        } catch {
            attempt.report.failedRequests += 1
            try await refused(batch, error as? UploadError ?? .transport("\(error)"), &attempt)
            return
        }
        backoff.reset()
        try await settle { try await spool.acknowledge(batch) }
        attempt.report.delivered += batch.records.count
        attempt.acceptedAny = true
    }

    /// Handles a failed request for `batch` according to what the failure says about it.
    private func refused(_ batch: Batch, _ error: UploadError, _ attempt: inout Attempt) async throws {
        switch error.fault {
        case .remoteUnavailable, .endpointRefused:
            let pause = pause(for: error, cause: error.fault == .endpointRefused ? .endpointRefused : .remoteUnavailable)
            attempt.report.pause = pause
            try await settle { try await spool.release(batch, retryAt: pause.until) }
            var metadata = metadata(batch)
            metadata["logship.upload.error"] = "\(error)"
            metadata["logship.upload.retry_at"] = "\(Timestamp(pause.until).rfc3339)"
            if pause.cause == .endpointRefused {
                logger.error("the remote refuses the endpoint or the credentials; delivery paused", metadata: metadata)
            } else {
                logger.warning("upload failed; delivery paused, will retry", metadata: metadata)
            }
        case .recordsRefused, .unclear:
            guard batch.records.count > 1 else {
                attempt.refused.append((batch, error))
                if error.fault == .unclear && !attempt.acceptedAny
                    && attempt.refused.count(where: { $0.error.fault == .unclear }) >= 2
                {
                    attempt.report.pause = pause(for: error, cause: .endpointRefused)
                }
                return
            }
            let (first, second) = batch.halves()
            try await deliver(first, &attempt)
            try await deliver(second, &attempt)
        }
    }

    /// Dead-letters the lone records the remote refused, or, for unclear refusals of a remote that accepted
    /// nothing, puts them back to wait out a pause.
    private func settleRefused(_ attempt: inout Attempt) async throws {
        for (batch, error) in attempt.refused {
            if error.fault == .recordsRefused || attempt.acceptedAny {
                try await settle {
                    try await spool.deadLetter(batch, failure: DeliveryFailure(status: error.status, reason: error.description))
                }
                attempt.report.deadLettered += batch.records.count
                var metadata = metadata(batch)
                metadata["logship.upload.error"] = "\(error)"
                logger.error("remote refused a record; moved to dead letters", metadata: metadata)
            } else {
                let pause = attempt.report.pause ?? pause(for: error, cause: .endpointRefused)
                attempt.report.pause = pause
                try await settle { try await spool.release(batch, retryAt: pause.until) }
                var metadata = metadata(batch)
                metadata["logship.upload.error"] = "\(error)"
                logger.error(
                    "the remote refuses every record it was sent, not some; delivery paused, nothing dead-lettered",
                    metadata: metadata)
            }
        }
    }

    /// The pause a failure calls for: the remote's `Retry-After` up to ``retryAfterMaximum``, or the shared
    /// backoff, whichever is longer (so a remote answering `Retry-After: 0` cannot be hammered).
    private func pause(for error: UploadError, cause: DeliveryPause.Cause) -> DeliveryPause {
        var delay = backoff.nextDelay().seconds
        if let asked = error.retryAfter {
            let allowed = min(asked, retryAfterMaximum.seconds)
            if asked > allowed {
                logger.notice(
                    "the remote asked for a longer pause than upload.retry_after_max allows",
                    metadata: [
                        "logship.upload.retry_after.asked": "\(asked)s",
                        "logship.upload.retry_after.used": "\(allowed)s",
                    ])
            }
            delay = max(delay, allowed)
        }
        return DeliveryPause(until: Date().addingTimeInterval(delay), cause: cause, reason: error.description)
    }

    /// Runs a settling write in a task of its own: it must complete even when the operation was cancelled
    /// (GRDB does not start a write in a cancelled task), or the batch would stay claimed until a restart.
    private func settle(_ write: @escaping @Sendable () async throws -> Void) async throws {
        try await Task { try await write() }.value
    }

    static func body(of batch: Batch) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(batch.byteCount)
        for record in batch.records {
            body.append(contentsOf: record.line)
            body.append(UInt8(ascii: "\n"))
        }
        return body
    }

    private func metadata(_ batch: Batch) -> Logger.Metadata {
        [
            "logship.batch.priority": "\(batch.priority)",
            "logship.batch.records": "\(batch.records.count)",
            "logship.batch.first": "\(batch.records.first?.sequence ?? 0)",
        ]
    }
}
