import Foundation
import Logging

/// What one `LogOperation` did.
public enum DeliveryOutcome: Hashable, Sendable {
    /// The class had nothing unclaimed.
    case nothingToSend
    /// The class's oldest record waits for its retry time.
    case waiting(until: Date)
    /// A batch was claimed and every record of it settled: delivered, dead-lettered or put back.
    case attempted(DeliveryReport)
}

/// The settlement of one claimed batch.
public struct DeliveryReport: Hashable, Sendable {
    public var delivered = 0
    public var deadLettered = 0
    public var requests = 0
    public var failedRequests = 0
    /// Set when a retryable failure put records back: nothing should be sent before this time.
    public var retryAt: Date?

    public init() {}
}

/// One delivery attempt: claim a batch of one class, post it, and settle every record of it in the spool.
///
/// - Retryable failures (transport errors, timeouts, 408, 429, 5xx) put the batch back with a retry time: the
///   remote's `Retry-After` if it sent one, else the shared backoff.
/// - Permanent failures (other 4xx, and 413 Payload Too Large) split the batch in halves, and the halves are sent
///   in turn, until the records the remote refuses are alone; only those go to the dead-letter table, so nothing
///   behind a bad record waits for a human.
///
/// This is the work a `LogOperation` performs; keeping it apart from the operation keeps the queue mechanics and
/// the delivery rules separately testable.
public struct BatchDelivery: Sendable {
    public var spool: any Spool
    public var uploader: any Uploader
    public var limits: BatchLimits
    public var backoff: RetryBackoff
    public var logger: Logger

    public init(spool: any Spool, uploader: any Uploader, limits: BatchLimits, backoff: RetryBackoff, logger: Logger) {
        self.spool = spool
        self.uploader = uploader
        self.limits = limits
        self.backoff = backoff
        self.logger = logger
    }

    /// Claims and sends the next batch of `priority`.
    ///
    /// - Parameters:
    ///   - claimed: Called right after the claim, before any upload, with whether ready records of the class were
    ///     left behind, so the class's next batch can be waiting for the other slot.
    /// - Important: A claimed batch is always settled, also when the task is cancelled mid-request (its records
    ///   are then put back, ready at once).
    /// - Throws: Only spool errors.
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
            var report = DeliveryReport()
            try await deliver(batch, report: &report)
            return .attempted(report)
        }
    }

    private func deliver(_ batch: Batch, report: inout DeliveryReport) async throws {
        report.requests += 1
        do {
            try await uploader.upload(
                Payload(body: Self.body(of: batch), recordCount: batch.records.count, batchNumber: batch.number))
        } catch is CancellationError {
            try await spool.release(batch, retryAt: Date())
            logger.debug("upload cancelled; batch kept", metadata: metadata(batch))
            return
        } catch let error as UploadError where !error.isRetryable {
            report.failedRequests += 1
            try await isolateRefused(batch, error: error, report: &report)
            return
        } catch {
            report.failedRequests += 1
            let retryAt = (error as? UploadError)?.retryAfter ?? Date().addingTimeInterval(backoff.nextDelay().seconds)
            try await spool.release(batch, retryAt: retryAt)
            report.retryAt = retryAt
            var metadata = metadata(batch)
            metadata["logship.upload.error"] = "\(error)"
            metadata["logship.upload.retry_at"] = "\(Timestamp(retryAt).rfc3339)"
            logger.warning("upload failed; will retry", metadata: metadata)
            return
        }
        backoff.reset()
        try await spool.acknowledge(batch)
        report.delivered += batch.records.count
    }

    /// Halves a refused batch until the refused records are alone, and dead-letters those.
    private func isolateRefused(
        _ batch: Batch, error: UploadError, report: inout DeliveryReport
    ) async throws {
        guard batch.records.count > 1 else {
            try await spool.deadLetter(batch, failure: DeliveryFailure(status: error.status, reason: error.description))
            report.deadLettered += 1
            var metadata = metadata(batch)
            metadata["logship.upload.error"] = "\(error)"
            logger.error("remote refused a record; moved to dead letters", metadata: metadata)
            return
        }
        let (first, second) = batch.halves()
        try await deliver(first, report: &report)
        if let retryAt = report.retryAt {
            // The remote stopped answering for good reasons: the rest waits with everything else.
            try await spool.release(second, retryAt: retryAt)
            return
        }
        try await deliver(second, report: &report)
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
