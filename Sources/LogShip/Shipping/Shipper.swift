import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The dam between the spool and the network: decides what goes next and hands `LogOperation`s to the queue.
///
/// The decisions are ``ShipperStateMachine``'s; the shipper feeds it events under a lock and carries out what it
/// returns after releasing the lock: creating and enqueueing operations, suspending and resuming the queue,
/// arming timers, cancelling operations at shutdown. The shipper alone creates operations and owns the queue; what
/// an operation does with its slot is ``BatchDelivery``'s, which knows of neither.
public final class Shipper: Service, Sendable {
    private typealias OperationID = ShipperStateMachine.OperationID

    /// The machine and everything the shipper holds for it, under one lock: the operations it knows of (so that
    /// cancellations reach them), the tasks sleeping until its timers, and who waits for it to go idle.
    private struct State {
        var machine: ShipperStateMachine
        var operations: [OperationID: LogOperation] = [:]
        /// Each timer's task with the number it was armed under, so that a task that fires removes its own entry
        /// and never a newer one armed for the same timer.
        var timers: [ShipperStateMachine.TimerID: (arming: UInt64, task: Task<Void, Never>)] = [:]
        var nextArming: UInt64 = 0
        var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID: UInt64 = 0
    }

    private let queue = OperationQueue()
    private let spool: any Spool
    private let delivery: BatchDelivery
    /// The delay after which a class whose operation failed in the spool is tried again; shared with delivery.
    private let backoff: RetryBackoff
    private let shutdownTimeout: Duration
    private let stuckAfter: Duration
    private let logger: Logger
    private let state: Mutex<State>
    /// The generation of the queue suspension last applied (see ``setQueueSuspended(_:generation:)``).
    private let appliedSuspension = Mutex<UInt64>(0)

    /// - Parameters:
    ///   - spool: Where the records wait, and what announces new ones.
    ///   - delivery: What each operation does: claim, post, settle.
    ///   - backoff: The backoff delivery uses, also for a class whose operation failed in the spool.
    ///   - maxInFlight: The most requests open at once (`upload.max_in_flight`).
    ///   - shutdownTimeout: How long requests in flight may take to finish after shutdown begins.
    ///   - stuckAfter: How long an operation may spend on one batch before the shipping path counts as wedged
    ///     (``isMoving``); every request is bounded by `upload.timeout`, so a few times that.
    init(
        spool: any Spool,
        delivery: BatchDelivery,
        backoff: RetryBackoff,
        maxInFlight: Int,
        shutdownTimeout: Duration,
        stuckAfter: Duration,
        logger: Logger
    ) {
        precondition(maxInFlight > 0)
        state = Mutex(State(machine: ShipperStateMachine(slots: maxInFlight)))
        queue.maxConcurrentOperationCount = maxInFlight
        queue.name = "logshipd.upload"
        self.spool = spool
        self.delivery = delivery
        self.backoff = backoff
        self.shutdownTimeout = shutdownTimeout
        self.stuckAfter = stuckAfter
        self.logger = logger
    }

    /// The link's budget its operations spend.
    public var throttle: UploadThrottle { delivery.throttle }

    /// Tells the shipper that records of these classes were accepted into the spool.
    public func recordsAvailable(_ classes: some Sequence<PriorityClass>) {
        let classes = Set(classes)
        perform(state.withLock { $0.machine.recordsAvailable(classes, now: Date()) })
    }

    public var statistics: Statistics {
        state.withLock { state in
            var statistics = Statistics(
                totals: state.machine.totals, operationsInFlight: state.machine.runningCount,
                pausedByOperator: state.machine.isPausedByOperator, lastError: state.machine.lastError,
                lastAcceptedAt: state.machine.lastAcceptedAt, throttledSeconds: state.machine.secondsThrottled(now: Date()))
            switch state.machine.remote {
            case .accepting: break
            case .paused(let pause, _, _): statistics.pause = pause
            case .retrying(let pause): statistics.lastFailure = pause
            }
            return statistics
        }
    }

    /// Stops (`true`) or restarts uploads, as `logctl pause` and `logctl resume` ask: requests in flight finish,
    /// no new one starts, intake goes on. Only this process remembers it: a restart resumes.
    /// - Returns: Whether it changed anything: `false` for a pause while paused, or a resume while not.
    @discardableResult
    public func setPausedByOperator(_ paused: Bool) -> Bool {
        let (changed, actions) = state.withLock { state in
            (state.machine.isPausedByOperator != paused, state.machine.setPausedByOperator(paused, now: Date()))
        }
        perform(actions)
        return changed
    }

    /// Whether the shipping path moves: no operation has spent longer than `stuckAfter` on one batch. What feeds
    /// the watchdog.
    public var isMoving: Bool {
        guard let oldest = state.withLock({ $0.machine.oldestBatchStart }) else { return true }
        return Date().timeIntervalSince(oldest) < stuckAfter.seconds
    }

    /// Resumes delivery of what the spool already holds, runs until graceful shutdown, then lets requests in flight
    /// finish within the shutdown timeout.
    ///
    /// - Important: Records that are not delivered by then stay in the spool; nothing new starts once shutdown
    ///   has begun.
    public func run() async throws {
        // Subscribed before reading what is pending, so that no commit falls between the two; a class announced
        // twice costs nothing.
        spool.availability.subscribe { [weak self] classes in self?.recordsAvailable(classes) }
        throttle.observeChanges { [weak self] in
            self.map { shipper in shipper.perform(shipper.state.withLock { $0.machine.budgetChanged(now: Date()) }) }
        }
        recordsAvailable(await spool.pendingClasses())
        try? await gracefulShutdown()
        await drain()
    }

    // MARK: Events from timers

    private func timerFired(_ timer: ShipperStateMachine.TimerID, arming: UInt64) {
        perform(state.withLock { state in
            if state.timers[timer]?.arming == arming { state.timers[timer] = nil }
            return state.machine.timerFired(timer, now: Date())
        })
    }

    // MARK: Actions

    /// Carries out what the machine decided, in the order it gave; never called with the lock held.
    private func perform(_ actions: [ShipperStateMachine.Action]) {
        for action in actions {
            switch action {
            case .setQueueSuspended(let isSuspended, let generation):
                setQueueSuspended(isSuspended, generation: generation)
            case .enqueue(let id, let priorityClass):
                enqueue(id, priorityClass)
            case .cancelTimer(let timer):
                state.withLock { $0.timers.removeValue(forKey: timer) }?.task.cancel()
            case .armTimer(let timer, let date):
                arm(timer, at: date)
            case .cancel(let id):
                state.withLock { $0.operations[id] }?.cancel()
            case .wakeIdleWaiters:
                let waiters = state.withLock { state in
                    defer { state.idleWaiters = [:] }
                    return Array(state.idleWaiters.values)
                }
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    private func enqueue(_ id: OperationID, _ priorityClass: PriorityClass) {
        let operation = LogOperation(id: id, priorityClass: priorityClass, delivery: delivery, owner: self)
        state.withLock { $0.operations[id] = operation }
        queue.addOperation(operation)
    }

    /// Suspends or resumes the queue, unless a later decision was applied already: two threads may carry out a
    /// pause and its end at once, and the later one must stay. (Resuming only schedules the queue's operations on
    /// its dispatch queue, so nothing re-enters this lock.)
    private func setQueueSuspended(_ isSuspended: Bool, generation: UInt64) {
        appliedSuspension.withLock { applied in
            guard generation > applied else { return }
            queue.isSuspended = isSuspended
            applied = generation
        }
    }

    /// Starts a task that reports `timer` at `date`. It is registered under the lock it would need to report, so
    /// it cannot fire before it is registered.
    private func arm(_ timer: ShipperStateMachine.TimerID, at date: Date) {
        let replaced = state.withLock { state -> Task<Void, Never>? in
            let arming = state.nextArming
            state.nextArming += 1
            let task = Task { [weak self] in
                do {
                    try await Task.sleep(for: .seconds(max(date.timeIntervalSinceNow, 0)))
                } catch {
                    return
                }
                self?.timerFired(timer, arming: arming)
            }
            return state.timers.updateValue((arming, task), forKey: timer)?.task
        }
        replaced?.cancel()
    }

    // MARK: Shutdown

    private func drain() async {
        let (actions, running) = state.withLock { ($0.machine.beginShutdown(now: Date()), $0.machine.runningCount) }
        perform(actions)
        let pendingTimers = state.withLock { state in
            defer { state.timers = [:] }
            return state.timers.values.map(\.task)
        }
        for timer in pendingTimers { timer.cancel() }
        guard running > 0 else { return }

        logger.info("waiting for requests in flight", metadata: ["logship.requests": "\(running)"])
        if await waitUntilIdle(within: shutdownTimeout) { return }

        let stragglers = state.withLock { $0.machine.shutdownTimedOut() }
        logger.warning(
            "requests still in flight at the shutdown timeout; cancelling them, their records stay spooled",
            metadata: ["logship.requests": "\(stragglers.count)"])
        perform(stragglers)
        _ = await waitUntilIdle(within: .seconds(2))
    }

    /// Waits until no operation is running, at most `timeout`; returns whether that happened.
    private func waitUntilIdle(within timeout: Duration) async -> Bool {
        await wait(within: timeout) { await self.idle() }
    }

    /// Returns true once no operation is running, or false if the task is cancelled first.
    private func idle() async -> Bool {
        let waiterID = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
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
    /// The queue started an operation: from here on it counts as in flight, unless the machine declines it.
    func operationStarted(_ id: ShipperStateMachine.OperationID) -> Bool {
        let (proceed, actions) = state.withLock { $0.machine.operationStarted(id, now: Date()) }
        perform(actions)
        return proceed
    }

    func operation(_ id: ShipperStateMachine.OperationID, claimedLeavingMore moreLeft: Bool) {
        perform(state.withLock { $0.machine.claimed(id, moreLeft: moreLeft) })
    }

    func operation(_ id: ShipperStateMachine.OperationID, delivered report: DeliveryReport) -> Bool {
        state.withLock { $0.machine.operationDelivered(id, report, now: Date()) }
    }

    func operation(_ id: ShipperStateMachine.OperationID, finished result: Result<DeliveryOutcome, any Error>) {
        let end: ShipperStateMachine.OperationEnd
        switch result {
        case .success(let outcome):
            end = .delivered(outcome)
        case .failure(is CancellationError):
            end = .cancelled
        case .failure(let error as SpoolError) where error == .closed:
            // The spool closes at the end of shutdown: what this operation had claimed stays stored.
            end = .cancelled
        case .failure(let error):
            let retryAt = Date().addingTimeInterval(backoff.nextDelay().seconds)
            logger.error(
                "the spool failed during delivery; class paused",
                metadata: [
                    "logship.error": "\(error)", "logship.spool.retry_at": "\(Timestamp(retryAt).rfc3339)",
                ])
            end = .failed(retryAt: retryAt)
        }
        perform(
            state.withLock { state in
                state.operations[id] = nil
                return state.machine.operationFinished(id, end, now: Date())
            })
    }
}
