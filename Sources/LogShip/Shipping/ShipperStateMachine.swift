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
///   queue starts during a pause (it may have been starting as the pause began) is declined and replaced. While
///   a crash operation waits, it alone is let through as a probe about every second (``CrashProbe``).
/// - Once shutdown begins nothing new is created; waiting operations are cancelled, running ones may finish.
struct ShipperStateMachine: Sendable {
    /// The longest a waiting crash record waits for a probe of a paused remote; each probe comes after a random
    /// half to all of it, so that a fleet does not probe in step.
    static let crashProbeInterval: TimeInterval = 1

    /// Requests the queue runs at once (`upload.max_in_flight`).
    let slots: Int
    // The state is internal, not private, so that the decisions in ShipperStateMachine+Decisions.swift can change
    // it; nothing outside the machine's files does.
    var phase = Phase.running
    var operations: [OperationID: TrackedOperation] = [:]
    var classes: [PriorityClass: ClassState] = [:]
    /// What the remote was last seen doing; while it is `paused`, all delivery is.
    var remote = RemoteState.accepting
    /// Whether an operator paused uploads (`logctl pause`).
    var isPausedByOperator = false
    /// The queue's suspension as last decided.
    var isQueueSuspended = false
    /// Counts of every batch settled since start.
    var totals = DeliveryCounts()
    /// Seconds each class spent waiting for the link's budget, up to its last wait's end.
    var throttledSeconds: [PriorityClass: TimeInterval] = [:]
    /// The latest failure since start (of a request, or of the spool while settling), for status output.
    var lastError: LastError?
    /// When the remote last accepted a request: a ``lastError`` before it is past.
    var lastAcceptedAt: Date?
    /// Where operation ids, timer generations and suspension generations are drawn from.
    var lastSerial: UInt64 = 0

    /// - Parameter slots: Requests the queue runs at once (`upload.max_in_flight`).
    init(slots: Int = 2) {
        precondition(slots > 0)
        self.slots = slots
    }

    /// Operations the queue is running.
    var runningCount: Int { operations.values.count { $0.isRunning } }

    /// When the longest-running batch began, if any operation runs.
    var oldestBatchStart: Date? { operations.values.compactMap(\.batchStartedAt).min() }

    /// Seconds each class has spent waiting for the link's budget since start, a wait under way included.
    func secondsThrottled(now: Date) -> [PriorityClass: TimeInterval] {
        var seconds = throttledSeconds
        for (priorityClass, state) in classes {
            guard let since = state.throttledSince else { continue }
            seconds[priorityClass, default: 0] += max(0, now.timeIntervalSince(since))
        }
        return seconds
    }

    /// Operations created and not yet started.
    var waitingClasses: [PriorityClass] { operations.values.filter { !$0.isRunning }.map(\.priorityClass) }

    // MARK: Events

    /// Records of `classes` became available in the spool (start-up, or a commit).
    mutating func recordsAvailable(_ classes: Set<PriorityClass>, now: Date) -> [Action] {
        var decisions = Decisions()
        // Most urgent first, so a burst across classes enters the queue in the order it should leave.
        for priorityClass in classes.sorted(by: >) {
            enqueueIfNeeded(priorityClass, &decisions)
        }
        armCrashProbeIfNeeded(now: now, &decisions)
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
            if !isPausedByOperator, operation.priorityClass == .crash, case .paused(let pause, let timer, .open) = remote {
                remote = .paused(pause, endedBy: timer, crashProbe: .sending(id))
                updateQueueSuspension(&decisions)
                operations[id]?.batchStartedAt = now
                return (true, decisions.actions)
            }
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
        var wasProbe = false
        if case .paused(let pause, let timer, .sending(id)) = remote {
            wasProbe = true
            remote = .paused(pause, endedBy: timer, crashProbe: .idle)
            if case .delivered(.attempted(let report)) = end, report.pause == nil,
                report.counts.delivered > 0 || report.counts.deadLettered > 0
            {
                // The probe got through: the shipper's pause ends, and what waited leaves in class order.
                decisions.cancelTimers.append(timer)
                remote = .accepting
                updateQueueSuspension(&decisions)
            }
        }
        switch end {
        case .delivered(.attempted(let report)):
            count(report)
            if var pause = report.pause {
                // A probe that failed the same way says the remote is still down, not that the rest should wait
                // longer; one that meets a refusal or a Retry-After is taken as it comes.
                if wasProbe, pause.allowsCrashProbes, let current = remote.pause { pause.until = min(pause.until, current.until) }
                begin(pause, &decisions)
            }
            if let until = report.spoolFailedUntil {
                lastError = LastError(reason: "the spool could not settle a batch", at: now)
                block(priorityClass, until: until, &decisions)
            } else if report.pause != nil || report.overload != nil {
                // The batch went back to the spool: it needs an operation waiting for the queue to resume, or for
                // the lower rate.
                enqueueIfNeeded(priorityClass, &decisions)
            }
        case .delivered(.waiting(let until)):
            block(priorityClass, until: until, &decisions)
        case .delivered(.throttled(let until)):
            if classes[priorityClass]?.throttledSince == nil { classes[priorityClass, default: ClassState()].throttledSince = now }
            block(priorityClass, until: until, &decisions)
        case .delivered(.nothingToSend), .cancelled:
            break
        case .failed(let retryAt):
            lastError = LastError(reason: "the spool failed during delivery", at: now)
            block(priorityClass, until: retryAt, &decisions)
        }
        if phase == .draining && runningCount == 0 {
            decisions.wakeIdleWaiters = true
        }
        armCrashProbeIfNeeded(now: now, &decisions)
        return decisions.actions
    }

    /// A timer fired at `now`.
    mutating func timerFired(_ timer: TimerID, now: Date) -> [Action] {
        var decisions = Decisions()
        guard phase == .running else { return decisions.actions }
        switch timer {
        case .endPause:
            guard case .paused(let pause, timer, let probe) = remote else { return decisions.actions }
            guard now >= pause.until else {
                // Early (the wall clock moved): wait for the rest.
                decisions.armTimers.append((timer, pause.until))
                return decisions.actions
            }
            if case .armed(let probeTimer) = probe { decisions.cancelTimers.append(probeTimer) }
            remote = .retrying(after: pause)
            updateQueueSuspension(&decisions)
        case .probeForCrash:
            guard case .paused(let pause, let endTimer, .armed(timer)) = remote else { return decisions.actions }
            let crashWaits = pause.allowsCrashProbes && classes[.crash]?.block == nil
                && operations.values.contains { $0.priorityClass == .crash && !$0.isRunning }
            remote = .paused(pause, endedBy: endTimer, crashProbe: crashWaits && !isPausedByOperator ? .open : .idle)
            updateQueueSuspension(&decisions)
        case .unblock(let priorityClass, _):
            guard let block = classes[priorityClass]?.block, block.timer == timer else { return decisions.actions }
            guard now >= block.until else {
                decisions.armTimers.append((timer, block.until))
                return decisions.actions
            }
            letGo(priorityClass, now: now, &decisions)
        }
        armCrashProbeIfNeeded(now: now, &decisions)
        return decisions.actions
    }

    /// The link's budget changed (a reload, `logctl throttle`): classes waiting for the old one are let go at
    /// once, to be measured against the new one.
    mutating func budgetChanged(now: Date) -> [Action] {
        var decisions = Decisions()
        guard phase == .running else { return decisions.actions }
        for priorityClass in PriorityClass.mostUrgentFirst where classes[priorityClass]?.throttledSince != nil {
            if let block = classes[priorityClass]?.block { decisions.cancelTimers.append(block.timer) }
            letGo(priorityClass, now: now, &decisions)
        }
        return decisions.actions
    }

    /// Ends the block of `priorityClass` (a retry time or a wait for the budget) and queues it if it has work.
    private mutating func letGo(_ priorityClass: PriorityClass, now: Date, _ decisions: inout Decisions) {
        classes[priorityClass]?.block = nil
        endThrottledWait(priorityClass, now: now)
        enqueueIfNeeded(priorityClass, &decisions)
    }

    /// An operator paused (`logctl pause`) or resumed uploads; intake goes on meanwhile.
    mutating func setPausedByOperator(_ paused: Bool, now: Date) -> [Action] {
        var decisions = Decisions()
        isPausedByOperator = paused
        updateQueueSuspension(&decisions)
        armCrashProbeIfNeeded(now: now, &decisions)
        return decisions.actions
    }

    /// Shutdown begins: nothing new is created, timers are dropped, waiting operations are cancelled (the queue
    /// must be running for them to finish), running ones may finish.
    mutating func beginShutdown(now: Date) -> [Action] {
        var decisions = Decisions()
        guard phase == .running else { return decisions.actions }
        phase = .draining
        for priorityClass in PriorityClass.mostUrgentFirst {
            endThrottledWait(priorityClass, now: now)
            guard let block = classes[priorityClass]?.block else { continue }
            decisions.cancelTimers.append(block.timer)
            classes[priorityClass]?.block = nil
        }
        if case .paused(let pause, let timer, let probe) = remote {
            decisions.cancelTimers.append(timer)
            if case .armed(let probeTimer) = probe { decisions.cancelTimers.append(probeTimer) }
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
}
