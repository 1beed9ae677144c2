import Foundation

/// The shipper's decisions, without the queue, the clock, tasks or locks: events go in, ``Action``s come out.
///
/// The ``Shipper`` holds the machine in a lock, tells it what happened (records became available, the queue
/// started an operation, a claim was made, an operation settled a batch, an operation finished, a timer fired,
/// shutdown began) and carries out the returned actions after releasing the lock: create and enqueue operations,
/// suspend or resume the queue, arm timers, cancel operations, wake whoever waits for the shipper to go idle.
///
/// The rules it keeps:
/// - One *waiting* operation per class; the backlog stays in the spool. When a slot frees, the queue picks the
///   most urgent waiting class, and that operation claims what its class accumulated.
/// - A running operation goes on to its class's next batch, without giving up its slot, only while its class has
///   a backlog and no operation of a more urgent class waits: a slot changes hands (a hop through the queue's
///   threads, which costs a one-record request more than the request itself) only when the queue's priority
///   order would choose differently. A crash operation that starts waiting is started after the request in
///   flight, as it would be if every batch had an operation of its own.
/// - While a class has a backlog (its last claim left records behind), it keeps one waiting operation per slot,
///   and every operation of it that starts puts the class's next one in the queue at once, so a freeing slot
///   always finds the class waiting. One per slot, because the queue may have taken a waiting operation to start
///   before the machine hears of it: two slots freeing at that moment must still both find the class.
/// - A class whose oldest record waits for a retry time is *blocked* until then: it has no waiting operation.
/// - A remote failure *pauses* all delivery: the queue is suspended until the pause ends, and an operation the
///   queue starts during a pause (it may have been starting as the pause began) is declined and replaced.
/// - Once shutdown begins nothing new is created; waiting operations are cancelled, running ones may finish.
struct ShipperStateMachine: Sendable {
    /// Names one operation for as long as it exists.
    struct OperationID: Hashable, Comparable, Sendable, CustomStringConvertible {
        fileprivate let rawValue: UInt64

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        var description: String { "operation \(rawValue)" }
    }

    /// Names one timer; a timer that fires after it was superseded is ignored.
    enum Timer: Hashable, Sendable {
        /// Ends a pause of all delivery.
        case endPause(generation: UInt64)
        /// Ends the block of a class whose oldest record waits for a retry time.
        case unblock(PriorityClass, generation: UInt64)
    }

    /// How an operation ended, as far as the machine is concerned.
    enum Completion: Hashable, Sendable {
        case delivered(DeliveryOutcome)
        /// The spool failed before or while settling; the class waits until `retryAt`.
        case failed(retryAt: Date)
        case cancelled
    }

    /// What the remote was last seen doing, for status output.
    enum RemoteState: Hashable, Sendable {
        /// Nothing has failed since the last success (or since start).
        case accepting
        /// Delivery is paused.
        case paused(DeliveryPause)
        /// A pause ended and nothing has been accepted since: the next requests are probes.
        case retrying(after: DeliveryPause)
    }

    /// One thing the shipper must do after an event. An event returns them in the order to carry them out: the
    /// queue's suspension first (so that an operation enqueued into a pause cannot start before it), then new
    /// operations, most urgent first, then timers cancelled before timers armed (a timer re-armed under the same
    /// name must survive), then operations cancelled, and waking the idle waiters last.
    enum Action: Equatable, Sendable {
        /// Suspend (`true`) or resume the queue. Two of these may be carried out at once by two threads, so the
        /// shipper applies ``ShipperStateMachine/queueSuspension`` as it reads it then, not this value alone:
        /// the later decision wins (see `Shipper.applyQueueSuspension`).
        case setQueueSuspended(Bool)
        /// Create an operation for the class and add it to the queue.
        case enqueue(OperationID, PriorityClass)
        /// Forget a timer no longer needed (an optimisation: a superseded timer that fires anyway is ignored).
        case cancelTimer(Timer)
        /// At `date`, report ``ShipperStateMachine/timerFired(_:now:)``.
        case armTimer(Timer, at: Date)
        /// Cancel an operation.
        case cancel(OperationID)
        /// Wake those waiting for the shipper to go idle.
        case wakeIdleWaiters
    }

    /// The actions of one event as it decides them, handed out in the order to carry them out.
    private struct Decisions {
        var suspension: Bool?
        var enqueue: [(OperationID, PriorityClass)] = []
        var cancelTimers: [Timer] = []
        var armTimers: [(Timer, Date)] = []
        var cancel: [OperationID] = []
        var wakeIdleWaiters = false

        var actions: [Action] {
            var actions: [Action] = suspension.map { [.setQueueSuspended($0)] } ?? []
            actions += enqueue.map { .enqueue($0, $1) }
            actions += cancelTimers.map { .cancelTimer($0) }
            actions += armTimers.map { .armTimer($0, at: $1) }
            actions += cancel.map { .cancel($0) }
            if wakeIdleWaiters { actions.append(.wakeIdleWaiters) }
            return actions
        }
    }

    /// Counts since start.
    struct Counters: Hashable, Sendable {
        var deliveredRecords = 0
        var deadLetteredRecords = 0
        var requests = 0
        var failedRequests = 0
    }

    private struct Operation {
        var priorityClass: PriorityClass
        /// When it began its current batch: when the queue started it, or when it went on to a next batch; `nil`
        /// while it waits.
        var batchStartedAt: Date?
        var isRunning: Bool { batchStartedAt != nil }
    }

    private enum Phase {
        case running
        case draining
    }

    /// Requests the queue runs at once (`upload.max_in_flight`).
    let slots: Int
    private var phase = Phase.running
    private var operations: [OperationID: Operation] = [:]
    private var nextOperationID: UInt64 = 0
    /// Classes whose oldest record waits for a retry time, until when, and the timer that ends the block.
    private var blocked: [PriorityClass: (until: Date, generation: UInt64)] = [:]
    /// The pause of all delivery, and the timer that ends it.
    private var pause: (pause: DeliveryPause, generation: UInt64)?
    /// Classes whose last claim left records behind.
    private var backlogged: Set<PriorityClass> = []
    private var nextTimerGeneration: UInt64 = 0
    private(set) var counters = Counters()
    /// Whether an operator paused uploads (`logctl pause`).
    private(set) var isPausedByOperator = false
    /// The last failure since start and when it happened, for status output.
    private(set) var lastError: (reason: String, at: Date)?
    private(set) var remote = RemoteState.accepting
    /// Whether the queue should be suspended, and a number that grows with every change, so the shipper can
    /// tell a stale reading from the current one.
    private(set) var queueSuspension: (isSuspended: Bool, generation: UInt64) = (false, 0)

    /// - Parameter slots: Requests the queue runs at once (`upload.max_in_flight`).
    init(slots: Int = 2) {
        precondition(slots > 0)
        self.slots = slots
    }

    /// Operations the queue is running.
    var runningCount: Int { operations.values.count { $0.isRunning } }

    /// When the longest-running batch began, if any operation runs.
    var oldestBatchStart: Date? { operations.values.compactMap(\.batchStartedAt).min() }

    /// Operations created and not yet started.
    var waitingClasses: [PriorityClass] { operations.values.filter { !$0.isRunning }.map(\.priorityClass) }

    var isDraining: Bool { phase == .draining }

    // MARK: Events

    /// Records of `classes` became available in the spool (start-up, or a commit).
    mutating func recordsAvailable(_ classes: Set<PriorityClass>) -> [Action] {
        var decisions = Decisions()
        // Most urgent first, so a burst across classes enters the queue in the order it should leave.
        for priorityClass in classes.sorted(by: >) {
            enqueueIfNeeded(priorityClass, &decisions)
        }
        return decisions.actions
    }

    /// The queue started operation `id`. Returns whether it may proceed to claim.
    ///
    /// An operation is declined once shutdown has begun, or while delivery is paused by the remote or an
    /// operator (the queue may have been starting it as the pause began); a declined operation finishes without claiming, and a paused class gets a
    /// new waiting operation in its place.
    mutating func operationStarted(_ id: OperationID, now: Date) -> (proceed: Bool, actions: [Action]) {
        var decisions = Decisions()
        guard phase == .running, let operation = operations[id], !operation.isRunning else { return (false, decisions.actions) }
        if isPausedByOperator || (pause.map { $0.pause.until > now } ?? false) {
            operations[id] = nil
            enqueueIfNeeded(operation.priorityClass, &decisions)
            return (false, decisions.actions)
        }
        operations[id]?.batchStartedAt = now
        if backlogged.contains(operation.priorityClass) {
            enqueueIfNeeded(operation.priorityClass, &decisions)
        }
        return (true, decisions.actions)
    }

    /// Operation `id` made its claim; `moreLeft` says whether records of its class were left behind.
    mutating func claimed(_ id: OperationID, moreLeft: Bool) -> [Action] {
        var decisions = Decisions()
        guard let operation = operations[id] else { return decisions.actions }
        if moreLeft {
            backlogged.insert(operation.priorityClass)
            enqueueIfNeeded(operation.priorityClass, &decisions)
        } else {
            backlogged.remove(operation.priorityClass)
        }
        return decisions.actions
    }

    /// Operation `id` settled a batch as `report` says and would claim the next one of its class. Returns whether
    /// it may: while its class is backlogged and the batch went through, unless delivery is paused (by the remote
    /// or an operator), shutdown has begun, the class is blocked, or an operation of a more urgent class waits.
    ///
    /// A batch the operation goes on from is counted here; otherwise the operation finishes with `report`, and
    /// ``operationFinished(_:_:now:)`` counts it.
    ///
    /// - Note: A pause that `report` carries begins when the operation finishes, a moment after this declines:
    ///   in that moment the other slot's operation may still go on to one more batch, which then meets the same
    ///   remote and is handled like the first.
    mutating func operationDelivered(_ id: OperationID, _ report: DeliveryReport, now: Date) -> Bool {
        guard phase == .running, let operation = operations[id], operation.isRunning,
            report.pause == nil, report.spoolFailedUntil == nil,
            pause == nil, !isPausedByOperator,
            backlogged.contains(operation.priorityClass), blocked[operation.priorityClass] == nil,
            !operations.values.contains(where: { !$0.isRunning && $0.priorityClass > operation.priorityClass })
        else { return false }
        count(report)
        operations[id]?.batchStartedAt = now
        return true
    }

    /// Operation `id` finished.
    mutating func operationFinished(_ id: OperationID, _ completion: Completion, now: Date) -> [Action] {
        var decisions = Decisions()
        guard let operation = operations.removeValue(forKey: id) else { return decisions.actions }
        let priorityClass = operation.priorityClass
        switch completion {
        case .delivered(.attempted(let report)):
            count(report)
            if let pause = report.pause {
                lastError = (pause.reason, now)
                begin(pause, &decisions)
            }
            if let until = report.spoolFailedUntil {
                lastError = ("the spool could not settle a batch", now)
                block(priorityClass, until: until, &decisions)
            } else if report.pause != nil {
                // The batch went back to the spool: it needs an operation waiting for the queue to resume.
                enqueueIfNeeded(priorityClass, &decisions)
            }
        case .delivered(.waiting(let until)):
            block(priorityClass, until: until, &decisions)
        case .delivered(.nothingToSend), .cancelled:
            break
        case .failed(let retryAt):
            lastError = ("the spool failed during delivery", now)
            block(priorityClass, until: retryAt, &decisions)
        }
        if phase == .draining && runningCount == 0 {
            decisions.wakeIdleWaiters = true
        }
        return decisions.actions
    }

    /// A timer fired at `now`.
    mutating func timerFired(_ timer: Timer, now: Date) -> [Action] {
        var decisions = Decisions()
        guard phase == .running else { return decisions.actions }
        switch timer {
        case .endPause(let generation):
            guard let current = pause, current.generation == generation else { return decisions.actions }
            guard now >= current.pause.until else {
                // Early (the wall clock moved): wait for the rest.
                decisions.armTimers.append((timer, current.pause.until))
                return decisions.actions
            }
            pause = nil
            remote = .retrying(after: current.pause)
            updateQueueSuspension(&decisions)
        case .unblock(let priorityClass, let generation):
            guard let current = blocked[priorityClass], current.generation == generation else { return decisions.actions }
            guard now >= current.until else {
                decisions.armTimers.append((timer, current.until))
                return decisions.actions
            }
            blocked[priorityClass] = nil
            enqueueIfNeeded(priorityClass, &decisions)
        }
        return decisions.actions
    }

    /// An operator paused (`logctl pause`) or resumed uploads; intake goes on meanwhile.
    mutating func setPausedByOperator(_ paused: Bool) -> [Action] {
        var decisions = Decisions()
        isPausedByOperator = paused
        updateQueueSuspension(&decisions)
        return decisions.actions
    }

    /// Shutdown begins: nothing new is created, timers are dropped, waiting operations are cancelled (the queue
    /// must be running for them to finish), running ones may finish.
    mutating func beginShutdown() -> [Action] {
        var decisions = Decisions()
        guard phase == .running else { return decisions.actions }
        phase = .draining
        decisions.cancelTimers = blocked.map { .unblock($0.key, generation: $0.value.generation) }
        if let pause {
            decisions.cancelTimers.append(.endPause(generation: pause.generation))
        }
        blocked = [:]
        if case .paused(let current) = remote {
            remote = .retrying(after: current)
        }
        pause = nil
        updateQueueSuspension(&decisions)
        decisions.cancel = operations.filter { !$0.value.isRunning }.map(\.key).sorted()
        if runningCount == 0 {
            decisions.wakeIdleWaiters = true
        }
        return decisions.actions
    }

    /// Requests in flight outlived the shutdown timeout: cancel them (their records stay spooled).
    func shutdownTimedOut() -> [Action] {
        var decisions = Decisions()
        decisions.cancel = operations.filter(\.value.isRunning).map(\.key).sorted()
        return decisions.actions
    }

    // MARK: Decisions

    /// Adds a settled batch to the counters; records it took or dead-lettered show that the remote accepts again.
    private mutating func count(_ report: DeliveryReport) {
        counters.deliveredRecords += report.delivered
        counters.deadLetteredRecords += report.deadLettered
        counters.requests += report.requests
        counters.failedRequests += report.failedRequests
        if report.pause == nil, report.delivered > 0 || report.deadLettered > 0, pause == nil {
            remote = .accepting
        }
    }

    /// Creates waiting operations for a class until it has one (one per slot while it is backlogged), unless the
    /// class is blocked or shutdown has begun.
    private mutating func enqueueIfNeeded(_ priorityClass: PriorityClass, _ decisions: inout Decisions) {
        guard phase == .running, blocked[priorityClass] == nil else { return }
        let wanted = backlogged.contains(priorityClass) ? slots : 1
        let waiting = operations.values.count { $0.priorityClass == priorityClass && !$0.isRunning }
        for _ in waiting..<max(wanted, waiting) {
            let id = OperationID(rawValue: nextOperationID)
            nextOperationID += 1
            operations[id] = Operation(priorityClass: priorityClass)
            decisions.enqueue.append((id, priorityClass))
        }
    }

    /// Blocks a class until `date`, or until an earlier date it is already blocked to.
    private mutating func block(_ priorityClass: PriorityClass, until date: Date, _ decisions: inout Decisions) {
        guard phase == .running else { return }
        if let existing = blocked[priorityClass] {
            guard date < existing.until else { return }
            decisions.cancelTimers.append(.unblock(priorityClass, generation: existing.generation))
        }
        let generation = newTimerGeneration()
        blocked[priorityClass] = (date, generation)
        decisions.armTimers.append((.unblock(priorityClass, generation: generation), date))
    }

    /// Pauses all delivery until the pause ends; a pause already running longer is kept, with the newer reason.
    private mutating func begin(_ newPause: DeliveryPause, _ decisions: inout Decisions) {
        guard phase == .running else { return }
        if let current = pause, current.pause.until >= newPause.until {
            var kept = newPause
            kept.until = current.pause.until
            pause = (kept, current.generation)
            remote = .paused(kept)
            return
        }
        if let current = pause {
            decisions.cancelTimers.append(.endPause(generation: current.generation))
        }
        let generation = newTimerGeneration()
        pause = (newPause, generation)
        remote = .paused(newPause)
        decisions.armTimers.append((.endPause(generation: generation), newPause.until))
        updateQueueSuspension(&decisions)
    }

    /// Suspends the queue while delivery is paused, by the remote or by the operator, unless shutdown has begun
    /// (waiting operations must be started to finish).
    private mutating func updateQueueSuspension(_ decisions: inout Decisions) {
        let isSuspended = phase == .running && (pause != nil || isPausedByOperator)
        guard queueSuspension.isSuspended != isSuspended else { return }
        queueSuspension = (isSuspended, queueSuspension.generation + 1)
        decisions.suspension = isSuspended
    }

    private mutating func newTimerGeneration() -> UInt64 {
        nextTimerGeneration += 1
        return nextTimerGeneration
    }
}
