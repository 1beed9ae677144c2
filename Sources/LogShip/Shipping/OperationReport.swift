import Foundation

/// What one `LogOperation` found and did: the facts the shipper's machine decides on.
enum OperationReport: Sendable {
    /// The class held nothing to claim.
    case nothingToSend
    /// Cancelled before its request went out: nothing of it went back to the spool (a part is still claimed).
    case cancelled
    /// Cancelled during its request: its records, and what a probe's verdict left claimed, went back to the spool.
    case cancelledInFlight
    /// The spool failed while claiming or settling; whatever was claimed is pending again.
    case spoolFailed(reason: String)
    /// One request went out.
    case sent(RequestReport)
}

/// What became of one request and of the records it carried.
struct RequestReport: Sendable {
    /// How the remote took it, as far as the link is concerned.
    enum Outcome: Sendable {
        /// The remote took the records.
        case accepted
        /// The remote answered, refusing the records for what they hold: the link works.
        case refusedRecords
        /// The link failed: no answer, or an answer that is not about the records (``UploadError/Fault``). The
        /// records went back to the spool.
        case failed(UploadError)
        /// The remote refused every part of a batch with an unclear 4xx: the endpoint refuses, not the records,
        /// which went back to the spool.
        case refusedEveryPart(UploadError)
    }

    var outcome: Outcome
    /// When the request was sent: a refusal answers the rate of that moment.
    var sentAt: ContinuousClock.Instant
    var counts = DeliveryCounts()
    /// What the request spent of the link's budget.
    var spending = UploadRateLimiter.Spending()
    /// Parts of a refused batch, still claimed, for the machine to send next.
    var parts: [BatchPart] = []
    /// Whether records went back to the spool, pending again.
    var isPutBack = false
    /// The request's failure, and when: what status shows as `last error`.
    var lastError: LastError?
    /// When the remote accepted it.
    var lastAcceptedAt: Date?

    init(outcome: Outcome, sentAt: ContinuousClock.Instant) {
        self.outcome = outcome
        self.sentAt = sentAt
    }
}
