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
    /// Requests the queue runs at once (`upload.max_in_flight`).
    let slots: Int
    private var phase = Phase.running
    private var operations: [OperationID: TrackedOperation] = [:]
    private var classes: [PriorityClass: ClassState] = [:]
    /// What the remote was last seen doing; while it is `paused`, all delivery is.
    private(set) var remote = RemoteState.accepting
    /// Whether an operator paused uploads (`logctl pause`).
    private(set) var isPausedByOperator = false
    /// The queue's suspension as last decided.
    private(set) var isQueueSuspended = false
    /// Counts of every batch settled since start.
    private(set) var totals = DeliveryCounts()
    /// The last failure since start and when it happened, for status output.
    private(set) var lastError: (reason: String, at: Date)?
    /// Where operation ids, timer generations and suspension generations are drawn from.
    private var lastSerial: UInt64 = 0

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
    /// operator (the queue may have been starting it as the pause began); a declined operation finishes without
    /// claiming, and a paused class gets a new waiting operation in its place.
    mutating func operationStarted(_ id: OperationID, now: Date) -> (proceed: Bool, actions: [Action]) {
        var decisions = Decisions()
        guard phase == .running, let operation = operations[id], !operation.isRunning else {
            return (false, decisions.actions)
        }
        if isPausedByOperator || (remote.pause.map { $0.until > now } ?? false) {
            operations[id] = nil
            enqueueIfNeeded(operation.priorityClass, &decisions)
            return (false, decisions.actions)
        }
        operations[id]?.batchStartedAt = now
        if classes[operation.priorityClass]?.isBacklogged == true {
            enqueueIfNeeded(operation.priorityClass, &decisions)
        }
        return (true, decisions.actions)
    }

    /// Operation `id` made its claim; `moreLeft` says whether records of its class were left behind.
    mutating func claimed(_ id: OperationID, moreLeft: Bool) -> [Action] {
        var decisions = Decisions()
        guard let operation = operations[id] else { return decisions.actions }
        classes[operation.priorityClass, default: ClassState()].isBacklogged = moreLeft
        if moreLeft {
            enqueueIfNeeded(operation.priorityClass, &decisions)
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
            remote.pause == nil, !isPausedByOperator,
            let state = classes[operation.priorityClass], state.isBacklogged, state.block == nil,
            !operations.values.contains(where: { !$0.isRunning && $0.priorityClass > operation.priorityClass })
        else { return false }
        count(report)
        operations[id]?.batchStartedAt = now
        return true
    }

    /// Operation `id` finished.
    mutating func operationFinished(_ id: OperationID, _ end: OperationEnd, now: Date) -> [Action] {
        var decisions = Decisions()
        guard let operation = operations.removeValue(forKey: id) else { return decisions.actions }
        let priorityClass = operation.priorityClass
        switch end {
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
    mutating func timerFired(_ timer: TimerID, now: Date) -> [Action] {
        var decisions = Decisions()
        guard phase == .running else { return decisions.actions }
        switch timer {
        case .endPause:
            guard case .paused(let pause, timer) = remote else { return decisions.actions }
            guard now >= pause.until else {
                // Early (the wall clock moved): wait for the rest.
                decisions.armTimers.append((timer, pause.until))
                return decisions.actions
            }
            remote = .retrying(after: pause)
            updateQueueSuspension(&decisions)
        case .unblock(let priorityClass, _):
            guard let block = classes[priorityClass]?.block, block.timer == timer else { return decisions.actions }
            guard now >= block.until else {
                decisions.armTimers.append((timer, block.until))
                return decisions.actions
            }
            classes[priorityClass]?.block = nil
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
        for priorityClass in PriorityClass.mostUrgentFirst {
            guard let block = classes[priorityClass]?.block else { continue }
            decisions.cancelTimers.append(block.timer)
            classes[priorityClass]?.block = nil
        }
        if case .paused(let pause, let timer) = remote {
            decisions.cancelTimers.append(timer)
            remote = .retrying(after: pause)
        }
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

    /// Adds a settled batch to the totals; records it took or dead-lettered show that the remote accepts again.
    private mutating func count(_ report: DeliveryReport) {
        totals += report.counts
        if report.pause == nil, report.counts.delivered > 0 || report.counts.deadLettered > 0, remote.pause == nil {
            remote = .accepting
        }
    }

    /// Creates waiting operations for a class until it has one (one per slot while it is backlogged), unless the
    /// class is blocked or shutdown has begun.
    private mutating func enqueueIfNeeded(_ priorityClass: PriorityClass, _ decisions: inout Decisions) {
        let state = classes[priorityClass] ?? ClassState()
        guard phase == .running, state.block == nil else { return }
        let wanted = state.isBacklogged ? slots : 1
        let waiting = operations.values.count { $0.priorityClass == priorityClass && !$0.isRunning }
        for _ in waiting..<max(wanted, waiting) {
            let id = OperationID(rawValue: nextSerial())
            operations[id] = TrackedOperation(priorityClass: priorityClass)
            decisions.enqueue.append((id, priorityClass))
        }
    }

    /// Blocks a class until `date`, or until an earlier date it is already blocked to.
    private mutating func block(_ priorityClass: PriorityClass, until date: Date, _ decisions: inout Decisions) {
        guard phase == .running else { return }
        if let existing = classes[priorityClass]?.block {
            guard date < existing.until else { return }
            decisions.cancelTimers.append(existing.timer)
        }
        let timer = TimerID.unblock(priorityClass, generation: nextSerial())
        classes[priorityClass, default: ClassState()].block = (date, timer)
        decisions.armTimers.append((timer, date))
    }

    /// Pauses all delivery until the pause ends; a pause already running longer is kept, with the newer reason.
    private mutating func begin(_ newPause: DeliveryPause, _ decisions: inout Decisions) {
        guard phase == .running else { return }
        if case .paused(let current, let timer) = remote {
            if current.until >= newPause.until {
                var kept = newPause
                kept.until = current.until
                remote = .paused(kept, endedBy: timer)
                return
            }
            decisions.cancelTimers.append(timer)
        }
        let timer = TimerID.endPause(generation: nextSerial())
        remote = .paused(newPause, endedBy: timer)
        decisions.armTimers.append((timer, newPause.until))
        updateQueueSuspension(&decisions)
    }

    /// Suspends the queue while delivery is paused, by the remote or by the operator, unless shutdown has begun
    /// (waiting operations must be started to finish).
    private mutating func updateQueueSuspension(_ decisions: inout Decisions) {
        let isSuspended = phase == .running && (remote.pause != nil || isPausedByOperator)
        guard isQueueSuspended != isSuspended else { return }
        isQueueSuspended = isSuspended
        decisions.suspension = (isSuspended, nextSerial())
    }

    private mutating func nextSerial() -> UInt64 {
        lastSerial += 1
        return lastSerial
    }
}
