import Foundation
import Logging

/// What becomes of a batch the remote refused: delivery paused, or its refused records dead-lettered.
extension BatchDelivery {
    /// Pauses all delivery for `error` and puts `batches` back.
    ///
    /// They go back ready: the shipper's pause holds every class until it ends (or a crash probe ends it), and
    /// then what waited leaves most urgent class first. A retry time of the pause's end would hold back the
    /// error records a pause put back behind info records that were never claimed.
    func pauseDelivery(
        for error: UploadError, cause: DeliveryPause.Cause, puttingBack batches: [Batch], _ attempt: inout Attempt
    ) async throws {
        let pause = pause(for: error, cause: cause)
        attempt.report.pause = pause
        for batch in batches {
            try await putBack(batch, attempt)
        }
        guard let first = batches.first else { return }
        var metadata = metadata(first)
        metadata["logship.batch.records"] = "\(batches.reduce(0) { $0 + $1.records.count })"
        metadata["logship.upload.error"] = "\(error)"
        metadata["logship.upload.retry_at"] = "\(Timestamp(pause.until).rfc3339)"
        let (level, message): (Logger.Level, Logger.Message) =
            switch (cause, error.fault) {
            case (.endpointRefused, .unclear):
                (.error, "the remote refuses every part of the batch, not some records; delivery paused, nothing dead-lettered")
            case (.endpointRefused, _):
                (.error, "the remote refuses the endpoint or the credentials; delivery paused")
            case (.remoteUnavailable, _):
                (.warning, "upload failed; delivery paused, will retry")
            }
        logger.log(level: repeatedPauses.level(for: error.description, level), message, metadata: metadata)
    }

    /// The pause a failure calls for: the remote's `Retry-After` up to ``retryAfterMaximum``, or the shared
    /// backoff, whichever is longer (so a remote answering `Retry-After: 0` cannot be hammered).
    private func pause(for error: UploadError, cause: DeliveryPause.Cause) -> DeliveryPause {
        var delay = backoff.nextDelay().seconds
        var isAskedByRemote = false
        if let asked = error.retryAfter {
            let allowed = min(asked, retryAfterMaximum.seconds)
            isAskedByRemote = allowed >= delay
            delay = max(delay, allowed)
            if asked > allowed {
                logger.notice(
                    "the remote asked for a longer pause than upload.retry_after_max allows",
                    metadata: [
                        "logship.upload.retry_after.asked": "\(asked)s",
                        "logship.upload.retry_after.used": "\(delay)s",
                    ])
            }
        }
        return DeliveryPause(
            until: Date().addingTimeInterval(delay), cause: cause, reason: error.description,
            isAskedByRemote: isAskedByRemote)
    }

    /// Puts `batch` back, ready at once (a pause or the budget holds it back, not a retry time).
    func putBack(_ batch: Batch, _ attempt: Attempt) async throws {
        try await settle(on: attempt.lane) { try await spool.settle(batch, .retry(at: Date())) }
    }

    /// Dead-letters the lone records the remote refused for what they hold, and the lines no request could carry.
    func deadLetterRefused(_ attempt: inout Attempt) async throws {
        for (batch, error) in attempt.refused {
            try await settle(on: attempt.lane) {
                let failure = DeliveryFailure(status: error.status, reason: error.description)
                try await spool.settle(batch, .deadLetter(failure))
            }
            attempt.report.counts.deadLettered += batch.records.count
            var metadata = metadata(batch)
            metadata["logship.upload.error"] = "\(error)"
            logger.error(
                error.isUnencodable
                    ? "a spooled line cannot be written in the upload format; moved to dead letters"
                    : "remote refused a record; moved to dead letters",
                metadata: metadata)
        }
    }
}
