import Foundation

@testable import LogShip

/// The shipper's machine with a manual clock and a stand-in for the queue: what the ``Shipper`` does with its
/// actions, kept as plain values to look at.
struct ShipperHarness {
    typealias Machine = ShipperStateMachine
    typealias OperationID = Machine.OperationID

    /// An operation the machine created.
    struct Operation {
        var id: OperationID
        var work: OperationWork
        /// The endpoint its request goes to.
        var endpoint = 0
        var isCancelled = false
        var priorityClass: PriorityClass { work.priorityClass }
    }

    var machine: Machine
    let start = ContinuousClock.now
    var now: ContinuousClock.Instant
    /// Operations in the queue, not started, in the order they were added.
    var waiting: [Operation] = []
    var running: [Operation] = []
    var timers: [Machine.TimerID: ContinuousClock.Instant] = [:]
    var isSuspended = false
    var notices: [Machine.Notice] = []
    var wokenIdleWaiters = 0
    /// The settings it started with, or was last reloaded with.
    var settings: Machine.Settings

    init(
        slots: Int = 2, limits: BatchLimits = BatchLimits(maxRecords: 100, maxBytes: 1 << 20),
        retry: RetryPolicy.Bounds = Self.retry, budget: UploadRateBudget = UploadRateBudget(), seed: UInt64 = 7,
        endpoints: [String] = ["https://logs.example/ingest"]
    ) {
        now = start
        settings = Machine.Settings(slots: slots, limits: limits, retry: retry, budget: budget, endpoints: endpoints)
        machine = Machine(settings, now: start, jitter: Jitter(seed: seed))
    }

    static let retry = RetryPolicy.Bounds(initial: .seconds(1), maximum: .seconds(30), retryAfterMaximum: .seconds(300))

    // MARK: Events

    /// A reload with other URLs, the rest of the settings as they were.
    mutating func reload(endpoints: [String]) {
        settings.endpoints = endpoints
        apply(machine.reconfigure(settings, now: now))
    }

    mutating func recordsAvailable(_ classes: Set<PriorityClass>) {
        apply(machine.recordsAvailable(classes, now: now))
    }

    /// The queue starts its most urgent waiting operation (as `OperationQueue` does by `queuePriority`, first
    /// added first among equals), if a slot is free and it is not suspended; a cancelled one finishes at once.
    @discardableResult
    mutating func startNext(slots: Int = 2) -> Operation? {
        guard !isSuspended, running.count < slots, !waiting.isEmpty else { return nil }
        let index = waiting.indices.max { waiting[$0].priorityClass < waiting[$1].priorityClass
            || (waiting[$0].priorityClass == waiting[$1].priorityClass && $0 > $1) }!
        let operation = waiting.remove(at: index)
        if operation.isCancelled {
            finish(operation, .cancelled)
            return nil
        }
        machine.operationStarted(operation.id, now: now)
        running.append(operation)
        return operation
    }

    /// Starts the first waiting operation to `endpoint` that is not cancelled, whatever its class: the queue's
    /// choice between operations of different endpoints is not what a test of one of them is about.
    mutating func start(endpoint: Int, slots: Int = 2) throws -> Operation {
        guard !isSuspended, running.count < slots,
            let index = waiting.firstIndex(where: { $0.endpoint == endpoint && !$0.isCancelled })
        else {
            throw HarnessError(description: "nothing to endpoint \(endpoint) started: \(waiting.count) waiting")
        }
        let operation = waiting.remove(at: index)
        machine.operationStarted(operation.id, now: now)
        running.append(operation)
        return operation
    }

    /// ``startNext(slots:)``, which must start one.
    mutating func start(slots: Int = 2) throws -> Operation {
        guard let operation = startNext(slots: slots) else {
            throw HarnessError(description: "nothing started: \(waiting.count) waiting, \(running.count) running")
        }
        return operation
    }

    /// Info records become available, and the next operation (the next for `endpoint`, when given) starts and
    /// claims some.
    mutating func claimInfo(endpoint: Int? = nil, moreLeft: Bool) throws -> Operation {
        recordsAvailable([.info])
        let operation = try endpoint.map { try start(endpoint: $0) } ?? start()
        claimed(operation, moreLeft: moreLeft)
        return operation
    }

    mutating func claimed(_ operation: Operation, spoolBytes: Int = 100, moreLeft: Bool) {
        apply(machine.operationClaimed(
            operation.id, BatchDelivery.Claim(spoolBytes: spoolBytes, moreLeft: moreLeft), now: now))
    }

    mutating func claimedNothing(_ operation: Operation) {
        apply(machine.operationClaimed(operation.id, nil, now: now))
    }

    mutating func finish(_ operation: Operation, _ report: OperationReport) {
        running.removeAll { $0.id == operation.id }
        apply(machine.operationFinished(operation.id, report, now: now))
    }

    /// Moves the clock on, firing every timer due on the way, in order.
    mutating func advance(to instant: ContinuousClock.Instant) {
        while let (timer, due) = timers.min(by: { $0.value < $1.value }), due <= instant {
            now = max(now, due)
            timers[timer] = nil
            apply(machine.timerFired(timer, now: now))
        }
        now = max(now, instant)
    }

    mutating func advance(by seconds: Double) {
        advance(to: now + .seconds(seconds))
    }

    // MARK: Actions

    mutating func apply(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .enqueue(let id, let work, let endpoint):
                waiting.append(Operation(id: id, work: work, endpoint: endpoint))
            case .cancel(let ids):
                for index in waiting.indices where ids.contains(waiting[index].id) { waiting[index].isCancelled = true }
                for index in running.indices where ids.contains(running[index].id) { running[index].isCancelled = true }
            case .armTimer(let timer, let instant):
                timers[timer] = instant
            case .cancelTimer(let timer):
                timers[timer] = nil
            case .setQueueSuspended(let suspended):
                isSuspended = suspended
            case .wakeIdleWaiters:
                wokenIdleWaiters += 1
            case .log(let notice):
                notices.append(notice)
            }
        }
    }

    /// The classes of the operations waiting and not cancelled, in the order they were added.
    var waitingClasses: [PriorityClass] { waiting.filter { !$0.isCancelled }.map(\.priorityClass) }

    var isPaused: Bool { machine.statistics(at: now, wallClock: Date()).pause != nil }
}

/// Reports as `BatchDelivery` makes them.
enum Reports {
    static func accepted(
        _ records: Int = 10, spoolBytes: Int = 1_000, at sentAt: ContinuousClock.Instant
    ) -> OperationReport {
        var report = RequestReport(outcome: .accepted, sentAt: sentAt)
        report.counts.requests = 1
        report.counts.delivered = records
        report.spending = UploadRateLimiter.Spending(
            requests: 1, sentBytes: spoolBytes, sentSpoolBytes: spoolBytes, failedSpoolBytes: 0)
        report.lastAcceptedAt = Date()
        return .sent(report)
    }

    /// A request the link failed: the records went back to the spool.
    static func failed(
        _ error: UploadError, spoolBytes: Int = 1_000, at sentAt: ContinuousClock.Instant
    ) -> OperationReport {
        var report = RequestReport(outcome: .failed(error), sentAt: sentAt)
        report.counts.requests = 1
        report.counts.failedRequests = 1
        report.counts.retriedRequests = 1
        report.isPutBack = true
        report.spending = UploadRateLimiter.Spending(
            requests: 1, sentBytes: 0, sentSpoolBytes: 0, failedSpoolBytes: error.status == nil ? 0 : spoolBytes)
        report.lastError = LastError(reason: error.description, at: Date())
        return .sent(report)
    }

    /// A batch of four info records refused by `endpoint` for what they hold: the report, and the halves it hands
    /// back as parts.
    static func refusedInHalves(
        at sentAt: ContinuousClock.Instant, by endpoint: Int = 0
    ) -> (report: OperationReport, first: Batch, second: Batch) {
        let batch = Batch(
            priority: .info, records: (1...4).map { SpooledRecord(sequence: $0, line: [0x7B, 0x7D]) },
            instance: .random())
        let (first, second) = batch.halves()
        let parts = [first, second].map { BatchPart(batch: $0, isolation: .records, endpoint: endpoint) }
        return (refusedRecords(parts: parts, at: sentAt), first, second)
    }

    static func refusedRecords(parts: [BatchPart], at sentAt: ContinuousClock.Instant) -> OperationReport {
        var report = RequestReport(outcome: .refusedRecords, sentAt: sentAt)
        report.counts.requests = 1
        report.counts.failedRequests = 1
        report.counts.rejectedRequests = 1
        report.parts = parts
        return .sent(report)
    }

    static let unavailable = UploadError.status(503, responseExcerpt: "")
    static let tooMany = UploadError.status(429, responseExcerpt: "")
    static let refusedConnection = UploadError.transport("cannot connect to 127.0.0.1:8514: connection refused")
    static let unauthorized = UploadError.status(401, responseExcerpt: "")
    static func retryAfter(_ seconds: Double) -> UploadError {
        .status(503, responseExcerpt: "", retryAfter: seconds)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
}
