import Foundation
import Logging

/// What one operation does: claim a batch of one class (or take a part of a refused one), post it, settle its
/// records in the spool, and report what happened.
///
/// It decides nothing about the link: whether a failure is noise, an outage or an overload is the shipper's
/// machine's to say (``RetryPolicy``). It decides only what becomes of the records:
/// - The remote took them: they are deleted, in a commit the spool makes in the background, so that the request's
///   slot is free again as soon as the remote has answered.
/// - The link failed (no answer, 408, 429, 5xx, a refused endpoint or credentials): they go back to the spool,
///   ready at once, and the machine says when they go again.
/// - The remote refused them for what they hold (400, 413, 415, 422, or a line that cannot be written in the
///   upload format): the batch is split in halves, which the machine sends as operations of their own, until
///   the refused records are alone; only those are dead-lettered, so nothing behind a bad record waits for a
///   human.
/// - Any other 4xx: the batch is sent again in parts (``RefusalProbes``): if the remote takes some, the refused
///   parts are isolated as above; if it refuses every part, they go back and the report says so.
///
/// Every record is settled or handed back as a part before ``perform(_:to:on:claimed:)`` returns, also when the
/// operation is cancelled mid-request: settling runs in a task of its own, which the cancellation does not reach.
struct BatchDelivery: Sendable {
    /// What a claim took, told before the request goes out.
    struct Claim: Sendable {
        var spoolBytes: Int
        /// Whether records of the class were left behind, so that the class's next operation can be waiting.
        var moreLeft: Bool
    }

    let spool: any Spool
    /// One per endpoint of `upload.url`, in order of preference: the machine says which a request goes to.
    let uploaders: [any Uploader]
    let logger: Logger
    /// Told how long each request took (the metrics' latency histogram).
    let observeRequest: (@Sendable (Duration) -> Void)?
    /// The lanes operations take (``UploadLoops``); `nil` runs delivery on the global pool, over the uploader's
    /// first connection.
    let loops: UploadLoops?
    private let probes = RefusalProbes()

    /// - Parameters:
    ///   - uploaders: One per endpoint, in order of preference.
    ///   - loops: The upload lanes, one per loop the uploaders have a connection on.
    ///   - observeRequest: Told how long each request took.
    init(
        spool: any Spool, uploaders: [any Uploader], loops: UploadLoops? = nil,
        observeRequest: (@Sendable (Duration) -> Void)? = nil, logger: Logger
    ) {
        precondition(!uploaders.isEmpty, "delivery needs an endpoint")
        self.spool = spool
        self.uploaders = uploaders
        self.loops = loops
        self.observeRequest = observeRequest
        self.logger = logger
    }

    /// Does one operation's work: one request at most.
    ///
    /// - Parameters:
    ///   - endpoint: Where the request goes: a place in ``uploaders``.
    ///   - lane: The upload lane the calling operation holds: its request goes out on that lane's connection, and
    ///     settling writes run on its loop. `nil` outside an operation.
    ///   - claimed: Called right after a claim, before the upload, with what it took (`nil` when it found
    ///     nothing).
    func perform(
        _ work: OperationWork, to endpoint: Int, on lane: UploadLane? = nil,
        claimed: @Sendable (Claim?) -> Void = { _ in }
    ) async -> OperationReport {
        let part: BatchPart?
        let batch: Batch
        switch work {
        case .claim(let priority, let grant):
            do {
                switch try await spool.claim(priority, limits: grant.limits) {
                case .empty:
                    claimed(nil)
                    return .nothingToSend
                case .batch(let claimedBatch, let moreLeft):
                    claimed(Claim(spoolBytes: claimedBatch.spoolBytes, moreLeft: moreLeft))
                    (batch, part) = (claimedBatch, nil)
                }
            } catch is CancellationError {
                return .cancelled
            } catch let error as SpoolError where error == .closed {
                // The spool closes at the end of shutdown: nothing was claimed.
                return .cancelled
            } catch {
                logger.error("the spool failed to claim a batch", metadata: ["logship.error": "\(error)"])
                return .spoolFailed(reason: "\(error)")
            }
        case .send(let sent):
            (batch, part) = (sent.batch, sent)
        }
        // A part that goes to another endpoint than the one that refused its batch (delivery moved) is sent as a
        // batch of its own: one receiver's answers must not decide what another's refusal meant. Its probe hears
        // it withdrawn, and a verdict that leaves is undecided.
        var isolation = part?.isolation
        var withdrawn: RefusalProbes.Verdict?
        if let part, part.endpoint != endpoint {
            isolation = nil
            if case .probe(let id) = part.isolation { withdrawn = probes.partWithdrawn(id) }
        }
        do {
            let report = try await send(batch, isolating: isolation, to: endpoint, on: lane)
            guard let withdrawn else { return report }
            return try await putBack(withdrawn, after: report, on: lane)
        } catch {
            // Writes nothing: fails only once the spool is closed, when no claim matters any more.
            try? await spool.settle(batch, .putBack)
            var metadata = metadata(batch)
            metadata["logship.error"] = "\(error)"
            logger.error("could not settle a batch in the spool; its records are pending again", metadata: metadata)
            return .spoolFailed(reason: "\(error)")
        }
    }

    /// Sends `batch` in one request to `endpoint` and settles what the answer settles.
    private func send(
        _ batch: Batch, isolating isolation: BatchPart.Isolation?, to endpoint: Int, on lane: UploadLane?
    ) async throws -> OperationReport {
        let uploader = uploaders[endpoint]
        let sentAt = ContinuousClock.now
        let bodyBytes: Int
        var failure: UploadError?
        do {
            bodyBytes = try await uploader.upload(
                Payload(
                    lines: batch.records.map(\.line), ids: batch.ids, batchNumber: batch.number,
                    lane: lane?.index ?? 0))
        } catch let error as UploadError where error.isUnencodable {
            // Nothing went out: no request and nothing spent; the records are refused as a remote refuses them.
            var report = RequestReport(outcome: .refusedRecords, sentAt: sentAt)
            try await isolate(batch, refusedWith: error, &report, for: endpoint, on: lane)
            return .sent(report)
        } catch is CancellationError {
            try await putBack([batch], on: lane)
            if case .probe(let id) = isolation, let verdict = probes.partWithdrawn(id) {
                try await putBack(verdict.parts, on: lane)
            }
            logger.debug("upload cancelled; batch kept", metadata: metadata(batch))
            return .cancelledInFlight
        } catch {
            bodyBytes = 0
            failure = error as? UploadError ?? .transport("\(error)")
        }
        observeRequest?(ContinuousClock.now - sentAt)
        var report = RequestReport(outcome: .accepted, sentAt: sentAt)
        report.counts.requests = 1
        report.spending.requests = 1
        guard let failure else {
            report.spending.sentBytes = bodyBytes
            report.spending.sentSpoolBytes = batch.spoolBytes
            report.lastAcceptedAt = Date()
            // Hands the delete to the spool's commit queue; the slot is free while it commits.
            try await spool.settle(batch, .delivered)
            report.counts.delivered = batch.records.count
            if case .probe(let id) = isolation, let verdict = probes.partAccepted(id) {
                try await apply(verdict, &report, for: endpoint, on: lane)
            }
            return .sent(report)
        }
        report.counts.failedRequests = 1
        // A request the remote answered was sent whole; one that never connected spent nothing.
        if failure.status != nil { report.spending.failedSpoolBytes = batch.spoolBytes }
        report.lastError = LastError(reason: failure.description, at: Date())
        // The library's own words only here: what the failure's description says is enough above debug.
        var metadata = metadata(batch)
        metadata["logship.upload.error"] = "\(failure)"
        if let detail = failure.detail { metadata["logship.upload.error.detail"] = "\(detail)" }
        logger.debug("upload request failed", metadata: metadata)

        switch (failure.fault, isolation) {
        case (.remoteUnavailable, _), (.endpointRefused, _):
            report.outcome = .failed(failure)
            report.counts.retriedRequests = 1
            try await putBack([batch], on: lane)
            report.isPutBack = true
            if case .probe(let id) = isolation, let verdict = probes.partWithdrawn(id) {
                try await apply(verdict, &report, for: endpoint, on: lane)
            }
        case (.recordsRefused, _), (.unclear, .records?):
            report.outcome = .refusedRecords
            try await isolate(batch, refusedWith: failure, &report, for: endpoint, on: lane)
        case (.unclear, .probe(let id)?):
            // Counted when the probe's verdict is in: rejected if the remote takes some part, retried if none.
            report.outcome = .refusedRecords
            if let verdict = probes.partRefused(id, batch, failure) {
                try await apply(verdict, &report, for: endpoint, on: lane)
            }
        case (.unclear, nil) where batch.records.count == 1:
            report.outcome = .refusedEveryPart(failure)
            report.counts.retriedRequests = 1
            try await putBack([batch], on: lane)
            report.isPutBack = true
        case (.unclear, nil):
            // The records, or everything? Their parts tell; the request is counted with the verdict.
            report.outcome = .refusedRecords
            let (id, parts) = probes.begin(batch)
            report.parts = parts.map { BatchPart(batch: $0, isolation: .probe(id), endpoint: endpoint) }
        }
        return .sent(report)
    }

    /// Carries out a probe's verdict on `endpoint`: refused parts isolated as refused records, or put back.
    private func apply(
        _ verdict: RefusalProbes.Verdict, _ report: inout RequestReport, for endpoint: Int, on lane: UploadLane?
    ) async throws {
        switch verdict {
        case .recordsRefused(let refused):
            // The batch the probe began with was refused for its records.
            report.counts.rejectedRequests += 1
            for (part, error) in refused {
                try await isolate(part, refusedWith: error, &report, for: endpoint, on: lane)
            }
        case .endpointRefuses(let parts, let error):
            report.counts.retriedRequests += 1 + parts.count
            try await putBack(parts, on: lane)
            report.isPutBack = true
            report.outcome = .refusedEveryPart(error)
            var metadata = parts.first.map(metadata) ?? [:]
            metadata["logship.upload.error"] = "\(error)"
            logger.error(
                "the remote refuses every part of the batch, not some records; nothing dead-lettered",
                metadata: metadata)
        case .undecided(let parts):
            report.counts.retriedRequests += 1 + parts.count
            try await putBack(parts, on: lane)
            report.isPutBack = true
        }
    }

    /// `batch` was refused by `endpoint` for what its records hold: halves to send on their own, or, a lone record,
    /// a dead letter.
    private func isolate(
        _ batch: Batch, refusedWith error: UploadError, _ report: inout RequestReport, for endpoint: Int,
        on lane: UploadLane?
    ) async throws {
        if !error.isUnencodable { report.counts.rejectedRequests += 1 }
        guard batch.records.count == 1 else {
            let (first, second) = batch.halves()
            report.parts += [first, second].map { BatchPart(batch: $0, isolation: .records, endpoint: endpoint) }
            return
        }
        try await write(on: lane) {
            try await spool.settle(batch, .deadLetter(DeliveryFailure(status: error.status, reason: error.description)))
        }
        report.counts.deadLettered += 1
        var metadata = metadata(batch)
        metadata["logship.upload.error"] = "\(error)"
        logger.error(
            error.isUnencodable
                ? "a spooled line cannot be written in the upload format; moved to dead letters"
                : "remote refused a record; moved to dead letters",
            metadata: metadata)
    }

    /// Puts back what a probe's verdict leaves claimed when its last part was withdrawn to go to another endpoint:
    /// undecided, whatever the endpoint that refused the batch said of the other parts; the records go to the
    /// active endpoint as new claims.
    private func putBack(
        _ verdict: RefusalProbes.Verdict, after report: OperationReport, on lane: UploadLane?
    ) async throws -> OperationReport {
        try await putBack(verdict.parts, on: lane)
        guard case .sent(var request) = report else { return report }
        request.counts.retriedRequests += 1 + verdict.parts.count
        request.isPutBack = true
        return .sent(request)
    }

    /// Puts `batches` back in the spool, ready at once: when they go again is the shipper's to say.
    private func putBack(_ batches: [Batch], on lane: UploadLane?) async throws {
        for batch in batches {
            try await write(on: lane) { try await spool.settle(batch, .putBack) }
        }
    }

    /// Runs a settling write in a task of its own, on the batch's lane: it must complete even when the operation
    /// was cancelled (GRDB does not start a write in a cancelled task), or the batch would stay claimed until a
    /// restart.
    private func write(on lane: UploadLane?, _ write: @escaping @Sendable () async throws -> Void) async throws {
        try await Task(executorPreference: lane?.executor) { try await write() }.value
    }

    private func metadata(_ batch: Batch) -> Logger.Metadata {
        [
            "logship.batch.priority": "\(batch.priority)",
            "logship.batch.records": "\(batch.records.count)",
            "logship.batch.first": "\(batch.records.first?.sequence ?? 0)",
        ]
    }
}

extension RefusalProbes.Verdict {
    /// Every part the verdict leaves claimed.
    var parts: [Batch] {
        switch self {
        case .recordsRefused(let refused): refused.map(\.part)
        case .endpointRefuses(let parts, _), .undecided(let parts): parts
        }
    }
}
