import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The dam between the spool and the network: decides what goes next and hands `LogOperation`s to the queue.
///
/// The decisions are ``ShipperStateMachine``'s; the shipper feeds it events under a lock, with the time on the
/// continuous clock, and carries out what it returns. Timers, the queue's suspension and the registry of
/// operations are changed under the same lock, so that a timer that fires is always one the machine still wants
/// (one way to ignore a stale event); adding operations to the queue, cancelling them, logging and waking waiters
/// happen after the lock is released. The shipper alone creates operations and owns the queue; what an operation
/// does with its request is ``BatchDelivery``'s, which knows of neither.
public final class Shipper: Service, Sendable {
    private typealias Machine = ShipperStateMachine
    private typealias OperationID = ShipperStateMachine.OperationID

    /// The machine and everything the shipper holds for it, under one lock: the operations it knows of (so that
    /// cancellations reach them), the tasks sleeping until its timers, and who waits for it to go idle.
    private struct State {
        var machine: Machine
        var operations: [OperationID: LogOperation] = [:]
        /// Each timer's task with the number it was armed under: a task that fires reports only while it is the
        /// one registered.
        var timers: [Machine.TimerID: (arming: UInt64, task: Task<Void, Never>)] = [:]
        var lastArming: UInt64 = 0
        var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var lastWaiterID: UInt64 = 0
    }

    /// What is left to do after the lock is released.
    private struct Deferred {
        var enqueue: [LogOperation] = []
        var cancel: [LogOperation] = []
        var notices: [Machine.Notice] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let queue = OperationQueue()
    private let spool: any Spool
    private let delivery: BatchDelivery
    private let shutdownTimeout: Duration
    private let stuckAfter: Duration
    private let logger: Logger
    private let state: Mutex<State>

    /// - Parameters:
    ///   - spool: Where the records wait, and what announces new ones.
    ///   - delivery: What each operation does: claim, post, settle.
    ///   - settings: Requests in flight (`upload.max_in_flight`), batch limits, retry bounds and the link's budget.
    ///   - shutdownTimeout: How long requests in flight may take to finish after shutdown begins.
    ///   - stuckAfter: How long a request may take before the shipping path counts as wedged (``isMoving``); every
    ///     request is bounded by `upload.timeout`, so a few times that.
    init(
        spool: any Spool, delivery: BatchDelivery, settings: ShipperStateMachine.Settings,
        shutdownTimeout: Duration, stuckAfter: Duration, logger: Logger
    ) {
        state = Mutex(State(machine: Machine(settings, now: .now)))
        queue.maxConcurrentOperationCount = settings.slots
        queue.name = "logshipd.upload"
        self.spool = spool
        self.delivery = delivery
        self.shutdownTimeout = shutdownTimeout
        self.stuckAfter = stuckAfter
        self.logger = logger
    }

    /// Tells the shipper that records of these classes were accepted into the spool.
    private func recordsAvailable(_ classes: some Sequence<PriorityClass>) {
        let classes = Set(classes)
        handle { $0.recordsAvailable(classes, now: .now) }
    }

    public var statistics: Statistics {
        state.withLock { $0.machine.statistics(at: .now, wallClock: Date()) }
    }

    /// Stops (`true`) or restarts uploads, as `logctl pause` and `logctl resume` ask: requests in flight finish,
    /// no new one starts, intake goes on. Only this process remembers it: a restart resumes.
    /// - Returns: Whether it changed anything: `false` for a pause while paused, or a resume while not.
    @discardableResult
    public func setPausedByOperator(_ paused: Bool) -> Bool {
        var changed = false
        handle { machine in
            let (didChange, actions) = machine.setPausedByOperator(paused, now: .now)
            changed = didChange
            return actions
        }
        return changed
    }

    /// Uses new batch limits, retry bounds and budget from now on (a reload); the budget ends an operator's
    /// `logctl throttle`.
    func reconfigure(_ settings: ShipperStateMachine.Settings) {
        handle { $0.reconfigure(settings, now: .now) }
    }

    /// `logctl throttle`: a byte budget in place of the configured one, or none at all (`off` lifts the request
    /// budget too), until the next reload.
    public func setThrottleOverride(_ override: ThrottleOverride?) {
        handle { $0.setThrottleOverride(override, now: .now) }
    }

    /// The configured budget as last loaded.
    public var budget: UploadRateBudget { state.withLock { $0.machine.configuredBudget } }

    /// The budget and the rate in force, for status and metrics.
    public var rateStatus: UploadRateStatus { state.withLock { $0.machine.rateStatus(at: .now) } }

    /// Whether the shipping path moves: no request has taken longer than `stuckAfter`. What feeds the watchdog.
    public var isMoving: Bool {
        guard let oldest = state.withLock({ $0.machine.oldestRequestStart }) else { return true }
        return ContinuousClock.now - oldest < stuckAfter
    }

    /// Resumes delivery of what the spool already holds, runs until graceful shutdown, then lets requests in flight
    /// finish within the shutdown timeout.
    ///
    /// - Important: Records that are not delivered by then stay in the spool; nothing new starts once shutdown
    ///   has begun.
    public func run() async throws {
        // Subscribed before reading what is pending, so that no commit falls between the two; a class announced
        // twice costs nothing.
        spool.availability.subscribe { [weak self] news in
            guard let self else { return }
            switch news {
            case .recordsAvailable(let classes):
                recordsAvailable(classes)
            case .acknowledgementsFailed(let classes, let reason):
                handle { $0.acknowledgementsFailed(classes, reason: reason, now: .now) }
            }
        }
        recordsAvailable(await spool.pendingClasses())
        try? await gracefulShutdown()
        await drain()
    }

    // MARK: Carrying out

    /// Feeds the machine an event under the lock, carries out under it what must be (timers, suspension, the
    /// registry of operations), and the rest after releasing it.
    private func handle(_ event: (inout Machine) -> [Machine.Action]) {
        let deferred = state.withLock { state in
            let actions = event(&state.machine)
            return perform(actions, &state)
        }
        finish(deferred)
    }

    private func perform(_ actions: [Machine.Action], _ state: inout State) -> Deferred {
        var deferred = Deferred()
        for action in actions {
            switch action {
            case .enqueue(let id, let work, let endpoint):
                let operation = LogOperation(id: id, work: work, endpoint: endpoint, delivery: delivery, owner: self)
                state.operations[id] = operation
                deferred.enqueue.append(operation)
            case .cancel(let ids):
                deferred.cancel += ids.compactMap { state.operations[$0] }
            case .armTimer(let timer, let instant):
                state.lastArming += 1
                let task = timerTask(timer, arming: state.lastArming, at: instant)
                state.timers.updateValue((state.lastArming, task), forKey: timer)?.task.cancel()
            case .cancelTimer(let timer):
                state.timers.removeValue(forKey: timer)?.task.cancel()
            case .setQueueSuspended(let isSuspended):
                // Resuming only schedules the queue's operations on its dispatch queues: nothing re-enters this
                // lock from here.
                queue.isSuspended = isSuspended
            case .wakeIdleWaiters:
                deferred.idleWaiters += state.idleWaiters.values
                state.idleWaiters = [:]
            case .log(let notice):
                deferred.notices.append(notice)
            }
        }
        return deferred
    }

    private func finish(_ deferred: Deferred) {
        for operation in deferred.enqueue { queue.addOperation(operation) }
        for operation in deferred.cancel { operation.cancel() }
        for notice in deferred.notices { log(notice) }
        for waiter in deferred.idleWaiters { waiter.resume() }
    }

    /// A task that reports `timer` at `instant`, if it is still the one armed then.
    private func timerTask(
        _ timer: Machine.TimerID, arming: UInt64, at instant: ContinuousClock.Instant
    ) -> Task<Void, Never> {
        Task { [weak self] in
            guard (try? await Task.sleep(until: instant, clock: .continuous)) != nil, let self else { return }
            let deferred = state.withLock { state -> Deferred? in
                // Cancelled or armed again while this one slept: not the timer the machine wants.
                guard state.timers[timer]?.arming == arming else { return nil }
                state.timers[timer] = nil
                return perform(state.machine.timerFired(timer, now: .now), &state)
            }
            if let deferred { finish(deferred) }
        }
    }

    private func log(_ notice: Machine.Notice) {
        switch notice {
        case .paused(let pause, let isRepeated):
            let metadata: Logger.Metadata = [
                "logship.upload.error": "\(pause.reason)",
                "logship.upload.retry_in": "\(pause.until - .now)",
            ]
            let (level, message): (Logger.Level, Logger.Message) =
                switch pause.cause {
                case .endpointRefused: (.error, "the remote refuses the endpoint or the credentials; delivery paused")
                case .remoteUnavailable: (.warning, "upload failed; delivery paused, will retry")
                }
            logger.log(level: isRepeated ? .debug : level, message, metadata: metadata)
        case .slowedDown(let reason, let bytesPerSecond, let isRepeated):
            logger.log(
                level: isRepeated ? .debug : .notice, "the remote is overloaded; upload rate lowered",
                metadata: [
                    "logship.upload.error": "\(reason)",
                    "logship.upload.rate": "\(bytesPerSecond.map(ByteRateText.format) ?? "unlimited")",
                ])
        case .spoolFailed(let reason, let retryAfter):
            logger.error(
                "the spool failed; the classes it failed for wait",
                metadata: ["logship.error": "\(reason)", "logship.spool.retry_in": "\(retryAfter)"])
        case .movedEndpoint(let from, let to, let reason?):
            logger.warning(
                "upload endpoint failed; delivery moved to the next",
                metadata: [
                    "logship.upload.from": "\(from)", "logship.upload.to": "\(to)",
                    "logship.upload.error": "\(reason)",
                ])
        case .movedEndpoint(let from, let to, nil):
            logger.notice(
                "a preferred upload endpoint answered again; delivery moved back to it",
                metadata: ["logship.upload.from": "\(from)", "logship.upload.to": "\(to)"])
        case .movedByReload(let from, let to):
            logger.notice(
                "upload.url changed by a reload; delivery starts with the most preferred endpoint not resting",
                metadata: ["logship.upload.from": "\(from)", "logship.upload.to": "\(to)"])
        }
    }

    // MARK: Shutdown

    private func drain() async {
        handle { $0.beginShutdown(now: .now) }
        let (running, timers) = state.withLock { state in
            defer { state.timers = [:] }
            return (state.machine.runningCount, state.timers.values.map(\.task))
        }
        for timer in timers { timer.cancel() }
        guard running > 0 else { return }

        logger.info("waiting for requests in flight", metadata: ["logship.requests": "\(running)"])
        if await waitUntilIdle(within: shutdownTimeout) { return }

        logger.warning(
            "requests still in flight at the shutdown timeout; cancelling them, their records stay spooled",
            metadata: ["logship.requests": "\(state.withLock { $0.machine.runningCount })"])
        handle { $0.shutdownTimedOut() }
        _ = await waitUntilIdle(within: .seconds(2))
    }

    /// Waits until no operation is running, at most `timeout`; returns whether that happened.
    private func waitUntilIdle(within timeout: Duration) async -> Bool {
        await wait(within: timeout) { await self.idle() }
    }

    /// Returns true once no operation is running, or false if the task is cancelled first.
    private func idle() async -> Bool {
        let waiterID = state.withLock { state in
            state.lastWaiterID += 1
            return state.lastWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    guard state.machine.runningCount > 0, !Task.isCancelled else { return true }
                    state.idleWaiters[waiterID] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.idleWaiters.removeValue(forKey: waiterID) }?.resume()
        }
        return state.withLock { $0.machine.runningCount == 0 }
    }
}

extension Shipper: LogOperationOwner {
    func operationStarted(_ id: ShipperStateMachine.OperationID) {
        state.withLock { $0.machine.operationStarted(id, now: .now) }
    }

    func operation(_ id: ShipperStateMachine.OperationID, claimed claim: BatchDelivery.Claim?) {
        handle { $0.operationClaimed(id, claim, now: .now) }
    }

    func operation(_ id: ShipperStateMachine.OperationID, finished report: OperationReport) {
        let deferred = state.withLock { state in
            state.operations[id] = nil
            return perform(state.machine.operationFinished(id, report, now: .now), &state)
        }
        finish(deferred)
    }
}
