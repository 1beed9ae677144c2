import Foundation

/// How delivery spends the link's budget (``UploadThrottle``): a claim sized to it, and a receiver's overload
/// answered by a lower rate.
extension BatchDelivery {
    /// What the budget let a class do.
    enum BudgetedClaim {
        /// It claimed within the grant, which must be settled with what the requests spent.
        case claimed(ClaimResult, UploadRateLimiter.Grant)
        /// It must wait for the budget until then; nothing was claimed.
        case wait(until: Date)
    }

    /// Claims the next batch of `priority` within what the budget holds now, or says how long to wait for it. A
    /// claim that finds nothing to send gives its grant back at once.
    func claimWithinBudget(_ priority: PriorityClass) async throws -> BudgetedClaim {
        var grant: UploadRateLimiter.Grant
        switch throttle.admit(priority, within: limits) {
        case .wait(let wait):
            return .wait(until: Date().addingTimeInterval(wait.seconds))
        case .go(let granted):
            grant = granted
        }
        do {
            let claim = try await spool.claim(priority, limits: grant.limits)
            if case .batch(let batch, _) = claim {
                throttle.shrink(&grant, toSpoolBytes: batch.spoolBytes)
            } else {
                throttle.settle(grant, UploadRateLimiter.Spending())
            }
            return .claimed(claim, grant)
        } catch {
            throttle.settle(grant, UploadRateLimiter.Spending())
            throw error
        }
    }

    /// The receiver is busy, not down (429 or 503 without `Retry-After`), and the rate it lets us send at is
    /// lower now: `batch` goes back ready, to wait for that rate rather than for a pause.
    func slowDown(for error: UploadError, puttingBack batch: Batch, _ attempt: inout Attempt) async throws {
        attempt.report.counts.retriedRequests += 1
        try await putBack(batch, attempt)
        attempt.report.overload = error.description
        var metadata = metadata(batch)
        metadata["logship.upload.error"] = "\(error)"
        metadata["logship.upload.rate"] = "\(throttle.status.effectiveBytesPerSecond.map(ByteRateText.format) ?? "unlimited")"
        logger.log(
            level: repeatedPauses.level(for: error.description, .notice),
            "the remote is overloaded; upload rate lowered, batch kept", metadata: metadata)
    }
}
