import Foundation
import Logging

/// What one `LogOperation` did.
public enum DeliveryOutcome: Hashable, Sendable {
    /// The class had nothing unclaimed.
    case nothingToSend
    /// The class's oldest record waits for its retry time.
    case waiting(until: Date)
    /// A batch reached the remote; `moreReady` says whether ready records of the class remain.
    case delivered(records: Int, moreReady: Bool)
    /// A batch failed and was put back, to be retried at the given time.
    case retrying(records: Int, at: Date)
}

/// One delivery attempt: claim a batch of one class, post it, and settle it in the spool.
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
    /// - Important: A claimed batch is always settled: acknowledged after a 2xx, otherwise released with a retry
    ///   time, also when the task is cancelled mid-request.
    /// - Throws: Only spool errors; upload failures become ``DeliveryOutcome/retrying(records:at:)``.
    public func deliverNext(_ priority: PriorityClass) async throws -> DeliveryOutcome {
        let batch: Batch
        let moreReady: Bool
        switch try await spool.claim(priority, limits: limits) {
        case .empty: return .nothingToSend
        case .waiting(let until): return .waiting(until: until)
        case .batch(let claimed, let more): (batch, moreReady) = (claimed, more)
        }

        var body: [UInt8] = []
        body.reserveCapacity(batch.byteCount)
        for record in batch.records {
            body.append(contentsOf: record.line)
            body.append(UInt8(ascii: "\n"))
        }

        do {
            try await uploader.upload(body, recordCount: batch.records.count)
        } catch {
            let retryAt = (error as? UploadError)?.retryAfter ?? Date().addingTimeInterval(backoff.nextDelay().seconds)
            try await spool.release(batch, retryAt: retryAt)
            if error is CancellationError {
                logger.debug("upload cancelled; batch kept", metadata: batchMetadata(batch))
            } else {
                var metadata = batchMetadata(batch)
                metadata["logship.upload.error"] = "\(error)"
                metadata["logship.upload.retry_at"] = "\(retryAt)"
                logger.warning("upload failed; will retry", metadata: metadata)
            }
            return .retrying(records: batch.records.count, at: retryAt)
        }
        backoff.reset()
        try await spool.acknowledge(batch)
        return .delivered(records: batch.records.count, moreReady: moreReady)
    }

    private func batchMetadata(_ batch: Batch) -> Logger.Metadata {
        [
            "logship.batch.id": "\(batch.id)",
            "logship.batch.priority": "\(batch.priority)",
            "logship.batch.records": "\(batch.records.count)",
        ]
    }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
