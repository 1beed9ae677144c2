import Foundation

/// The shipper's decisions, without the queue, the clock, tasks or locks: events go in, ``Action``s come out.
///
/// The ``Shipper`` holds the machine in a lock, tells it what happened (records became available, an operation
/// started, claimed, finished; a timer fired; an operator paused; shutdown began) with the time on the continuous
/// clock, and carries out the returned actions: create and enqueue operations, cancel them, arm and cancel timers,
/// suspend the queue, log what is news, wake whoever waits for the shipper to go idle.
///
/// Every request is one `LogOperation`. The machine decides only what to enqueue and when; the queue's priority
/// order picks what runs next. The rules it keeps:
/// - A class with records has one waiting operation; one per slot while its last claim left records behind, so
///   that a freeing slot always finds it. An operation claims when the queue starts it, so its batch holds what
///   came while the slots were busy. Parts of a refused batch go before new claims of their class.
/// - A failed request is judged by the ``RetryPolicy``: sent again at once (noise), slowed down (overload: the
///   rate of ``UploadRateLimiter`` drops), or a pause of all delivery. A pause cancels what waits in the queue and
///   enqueues nothing until it ends; while a crash record waits, a crash operation alone probes the remote about
///   every second, and its delivery ends the pause.
/// - With more than one endpoint (`upload.url` as a list), requests go to the active one. When it pauses, delivery
///   moves to the most preferred endpoint that is not resting, and the one left rests out its pause; the waiting
///   operations are cancelled and made again for the new one. A resting endpoint preferred over the active one (or
///   any, while the active one is paused too) is probed by one request once its rest is over: the next claim of a
///   class other than crash, or a timer's when records wait already; once it answers, delivery moves to it. A
///   batch is sent to one endpoint per request: accepted, it is deleted; failed, it is put back and may go to the
///   next. The budget and the slots are the link's, whichever endpoint is active.
/// - A class waits (nothing of it is enqueued) for the link's budget, or after the spool failed for it; a timer
///   ends the wait.
/// - An operator's pause suspends the queue: what waits stays, nothing starts, crash records too.
/// - Once shutdown begins nothing new is created; waiting operations are cancelled, running ones may finish.
///
/// Timers are named by what they end: arming one again replaces it, and the ``Shipper`` arms and cancels them
/// under the lock it feeds the machine under, so a timer that fires is always one the machine still wants.
struct ShipperStateMachine: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// The longest a waiting crash record waits for a probe of a paused remote; each probe comes after a random
    /// half to all of it, so that a fleet does not probe in step.
    static let crashProbeInterval = Duration.seconds(1)

    /// What the machine is configured with; a reload may change all but `slots`.
    struct Settings: Sendable {
        /// Requests the queue runs at once (`upload.max_in_flight`).
        var slots: Int
        var limits: BatchLimits
        var retry: RetryPolicy.Bounds
        var budget: UploadRateBudget
        /// The endpoints' names (their URLs, without credentials), in order of preference, each one once (the
        /// loader refuses URLs that differ only where they are not shown); a reload may rename them, not add or
        /// remove one.
        var endpoints: [String]
    }

    /// Names one operation for as long as it exists.
    struct OperationID: Hashable, Comparable, Sendable, CustomStringConvertible {
        let rawValue: UInt64

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        var description: String { "operation \(rawValue)" }
    }

    /// Names a timer by what it ends.
    enum TimerID: Hashable, Sendable {
        /// The pause of all delivery.
        case endPause
        /// The wait of a crash record for its probe of a paused remote.
        case probeForCrash
        /// The rest of an endpoint delivery moved away from: when it ends, one request probes it.
        case probeEndpoint(Int)
        /// A class's wait for the link's budget or for the spool.
        case endWait(PriorityClass)
    }

    /// Something the machine decided that is worth a log line.
    enum Notice: Hashable, Sendable {
        /// All delivery pauses; `isRepeated` when the failure is the one logged last.
        case paused(DeliveryPause, isRepeated: Bool)
        /// The receiver is overloaded and the rate came down to `bytesPerSecond`.
        case slowedDown(reason: String, bytesPerSecond: Int?, isRepeated: Bool)
        /// The spool failed for a class, or for delivered records; the classes wait `retryAfter`.
        case spoolFailed(reason: String, retryAfter: Duration)
        /// Delivery moved from one endpoint to another: away from a failure (`reason`), or back to a preferred
        /// one that answered its probe (`reason` is `nil`).
        case movedEndpoint(from: String, to: String, reason: String?)
        /// A reload changed `upload.url` before or at the active endpoint: delivery went from the URL it went to
        /// before to the most preferred endpoint not resting.
        case movedByReload(from: String, to: String)
    }

    /// One thing the shipper must do after an event, in the order given.
    enum Action: Sendable {
        /// Create an operation for the work and add it to the queue; its request goes to endpoint `to` (a place
        /// in ``Settings/endpoints``).
        case enqueue(OperationID, OperationWork, to: Int)
        /// Cancel operations: waiting ones finish as soon as the queue starts them, running ones stop.
        case cancel([OperationID])
        /// At `instant`, report ``ShipperStateMachine/timerFired(_:now:)``; replaces a timer of the same name.
        case armTimer(TimerID, at: Instant)
        case cancelTimer(TimerID)
        /// Suspend (`true`) or resume the queue.
        case setQueueSuspended(Bool)
        /// Wake those waiting for the shipper to go idle.
        case wakeIdleWaiters
        case log(Notice)
    }

    // MARK: State

    private enum Phase {
        case running
        /// `logctl pause`: the queue is suspended.
        case pausedByOperator
        /// Shutdown has begun: nothing new is created, running operations may finish.
        case draining
    }

    /// What the active endpoint was last seen doing.
    private enum Link {
        /// Nothing has failed since the last answer (or since start).
        case accepting
        /// All delivery is paused until the pause ends; a waiting crash record may probe meanwhile.
        case paused(DeliveryPause, probe: Probe)
        /// A pause ended and nothing has been answered since: the next requests are probes.
        case retrying(after: DeliveryPause)
    }

    /// Where a probe has got to: a pause's, for waiting crash records, or a resting endpoint's.
    private enum Probe: Equatable {
        case idle
        /// Records wait; the timer lets one operation through.
        case armed
        /// The probing operation is on its way.
        case sending(OperationID)
    }

    /// What the machine knows of one endpoint, the active one included.
    private struct Endpoint {
        var name: String
        /// Its own failures in a row and recent answers: one receiver's trouble says nothing of another's.
        var retry: RetryPolicy
        /// Set while delivery has moved away from it after a failure.
        var rest: Rest?
        /// Counts of the requests it was sent since start.
        var totals = DeliveryCounts()
    }

    /// The rest of an endpoint delivery moved away from: its pause, and the probe that follows it.
    private struct Rest {
        var pause: DeliveryPause
        var probe = Probe.idle
    }

    /// Why a class sends nothing for now.
    private enum Wait {
        /// For the link's budget, since `since`.
        case budget(until: Instant, since: Instant)
        /// After the spool failed for it.
        case spool(until: Instant)

        var until: Instant {
            switch self {
            case .budget(let until, _), .spool(let until): until
            }
        }
    }

    /// What the machine knows of one class.
    private struct ClassState {
        /// The spool may hold unclaimed records of it: a claim is worth making.
        var hasRecords = false
        /// Its last claim left records behind: it keeps one waiting operation per slot.
        var isBacklogged = false
        /// Announcements of new records so far: a claim that found nothing clears ``hasRecords`` only if none
        /// came since its operation was created.
        var announcements: UInt64 = 0
        /// Parts of refused batches, claimed, to send before new claims.
        var parts: [BatchPart] = []
        var wait: Wait?
    }

    private enum OperationState: Equatable {
        case waiting
        case running(since: Instant)
        /// Cancelled while waiting; it finishes when the queue starts it (or ran before it heard).
        case cancelled
    }

    private struct TrackedOperation {
        var work: OperationWork
        /// The endpoint its request goes to.
        var endpoint: Int
        /// That endpoint's URL when it was made: a reload may give the place another since.
        var endpointName: String
        var state: OperationState
        /// The class's ``ClassState/announcements`` when it was created.
        var announcementsAtCreation: UInt64
    }

    let slots: Int
    private var phase = Phase.running
    /// The endpoint new operations go to (its place in ``endpoints``), and what it was last seen doing.
    private var active = 0
    private var link = Link.accepting
    /// In order of preference.
    private var endpoints: [Endpoint]
    private var classes: [PriorityClass: ClassState] = [:]
    private var operations: [OperationID: TrackedOperation] = [:]
    private var budget: UploadRateLimiter
    private var limits: BatchLimits
    private var totals = DeliveryCounts()
    /// The counts of URLs a reload took out of `upload.url`, for when one comes back: its counts go on.
    private var countsByFormerURL: [String: DeliveryCounts] = [:]
    /// Seconds each class spent waiting for the link's budget, up to its last wait's end.
    private var throttledSeconds: [PriorityClass: Double] = [:]
    /// The latest failure since start (of a request, or of the spool), for status.
    private var lastError: LastError?
    /// When the remote last accepted a request: a ``lastError`` before it is past.
    private var lastAcceptedAt: Date?
    /// The failure last logged loudly since the remote last answered: the same one again is not news.
    private var lastNoticed: String?
    private var lastOperationID: UInt64 = 0
    private var jitter: Jitter

    init(
        _ settings: Settings, now: Instant, jitter: Jitter = Jitter()
    ) {
        precondition(settings.slots > 0 && !settings.endpoints.isEmpty)
        slots = settings.slots
        limits = settings.limits
        endpoints = settings.endpoints.map { Endpoint(name: $0, retry: RetryPolicy(bounds: settings.retry)) }
        budget = UploadRateLimiter(budget: settings.budget, now: now)
        self.jitter = jitter
    }

    // MARK: Events

    /// Records of `classes` became available in the spool (start-up, or a commit).
    mutating func recordsAvailable(_ classes: Set<PriorityClass>, now: Instant) -> [Action] {
        var actions: [Action] = []
        for priorityClass in classes {
            self.classes[priorityClass, default: ClassState()].hasRecords = true
            self.classes[priorityClass, default: ClassState()].announcements += 1
        }
        for priorityClass in PriorityClass.mostUrgentFirst where classes.contains(priorityClass) {
            fill(priorityClass, now: now, &actions)
        }
        armProbesIfNeeded(now: now, &actions)
        return actions
    }

    /// The queue started operation `id`: it counts as in flight from now on.
    mutating func operationStarted(_ id: OperationID, now: Instant) {
        operations[id]?.state = .running(since: now)
    }

    /// Operation `id` made its claim: what it took, or `nil` when it found nothing.
    mutating func operationClaimed(_ id: OperationID, _ claim: BatchDelivery.Claim?, now: Instant) -> [Action] {
        var actions: [Action] = []
        guard let operation = operations[id], case .claim(let priorityClass, var grant) = operation.work else {
            return actions
        }
        var gaveBack = false
        if let claim {
            gaveBack = budget.shrink(&grant, toSpoolBytes: claim.spoolBytes, now: now)
            operations[id]?.work = .claim(priorityClass, grant)
        }
        let moreLeft = claim?.moreLeft ?? false
        classes[priorityClass, default: ClassState()].isBacklogged = moreLeft
        if moreLeft {
            classes[priorityClass]?.hasRecords = true
        } else if classes[priorityClass]?.announcements == operation.announcementsAtCreation {
            classes[priorityClass]?.hasRecords = false
        }
        // A class waiting for the budget waits for tokens this claim held: with them back, it may go sooner.
        if gaveBack { actions += letBudgetWaitsGo(now: now) }
        fill(priorityClass, now: now, &actions)
        return actions
    }

    /// Operation `id` finished with `report`.
    mutating func operationFinished(_ id: OperationID, _ report: OperationReport, now: Instant) -> [Action] {
        var actions: [Action] = []
        guard let operation = operations.removeValue(forKey: id) else { return actions }
        let priorityClass = operation.work.priorityClass
        var wasProbe = false
        if case .paused(let pause, .sending(id)) = link {
            wasProbe = true
            link = .paused(pause, probe: .idle)
        }
        if endpoints[operation.endpoint].rest?.probe == .sending(id) {
            endpoints[operation.endpoint].rest?.probe = .idle
        }
        let grant: UploadRateLimiter.Grant? = if case .claim(_, let grant) = operation.work { grant } else { nil }
        // An operation that sent nothing spent nothing of what it was granted.
        if case .sent = report {} else if let grant { budget.charge(grant, UploadRateLimiter.Spending(), now: now) }
        switch report {
        case .nothingToSend:
            classes[priorityClass, default: ClassState()].isBacklogged = false
            if classes[priorityClass]?.announcements == operation.announcementsAtCreation {
                classes[priorityClass]?.hasRecords = false
            }
        case .cancelled:
            switch operation.work {
            case .send(let part) where phase != .draining:
                classes[priorityClass, default: ClassState()].parts.insert(part, at: 0)
            case .send, .claim:
                classes[priorityClass, default: ClassState()].hasRecords = true
            }
        case .cancelledInFlight:
            // Its records are pending again: a part of it would be sent twice from memory.
            classes[priorityClass, default: ClassState()].hasRecords = true
        case .spoolFailed(let reason):
            classes[priorityClass, default: ClassState()].hasRecords = true
            spoolFailed([priorityClass], reason: "the spool failed during delivery: \(reason)", now: now, &actions)
        case .sent(let request):
            budget.charge(grant ?? UploadRateLimiter.Grant(limits: limits), request.spending, now: now)
            count(request, endpointNamed: operation.endpointName)
            classes[priorityClass, default: ClassState()].parts += request.parts
            if request.isPutBack { classes[priorityClass]?.hasRecords = true }
            if endpoints[operation.endpoint].name != operation.endpointName {
                // Sent before a reload gave its place another URL: it says nothing of the endpoint there now.
            } else if operation.endpoint == active {
                judge(request, wasProbe: wasProbe, now: now, &actions)
            } else {
                judgeElsewhere(request, endpoint: operation.endpoint, now: now, &actions)
            }
        }
        fill(priorityClass, now: now, &actions)
        if phase == .draining && runningCount == 0 {
            actions.append(.wakeIdleWaiters)
        }
        armProbesIfNeeded(now: now, &actions)
        return actions
    }

    /// A timer fired at `now`.
    mutating func timerFired(_ timer: TimerID, now: Instant) -> [Action] {
        var actions: [Action] = []
        guard phase != .draining else { return actions }
        switch timer {
        case .endPause:
            guard case .paused(let pause, let probe) = link else { return actions }
            if probe == .armed { actions.append(.cancelTimer(.probeForCrash)) }
            link = .retrying(after: pause)
            letGoEveryClass(now: now, &actions)
        case .probeForCrash:
            guard case .paused(let pause, .armed) = link else { return actions }
            link = .paused(pause, probe: .idle)
            sendCrashProbe(pause, now: now, &actions)
        case .probeEndpoint(let endpoint):
            guard endpoints[endpoint].rest?.probe == .armed else { return actions }
            endpoints[endpoint].rest?.probe = .idle
            sendEndpointProbe(endpoint, now: now, &actions)
        case .endWait(let priorityClass):
            guard classes[priorityClass]?.wait != nil else { return actions }
            endWait(priorityClass, now: now)
            classes[priorityClass]?.hasRecords = true
            fill(priorityClass, now: now, &actions)
        }
        armProbesIfNeeded(now: now, &actions)
        return actions
    }

    /// Delivered records of `classes` could not be deleted from the spool and are pending again.
    mutating func acknowledgementsFailed(_ classes: Set<PriorityClass>, reason: String, now: Instant) -> [Action] {
        var actions: [Action] = []
        spoolFailed(classes, reason: "the spool could not delete delivered records: \(reason)", now: now, &actions)
        return actions
    }

    /// An operator paused (`logctl pause`) or resumed uploads; intake goes on meanwhile.
    /// - Returns: Whether it changed anything, and the actions.
    mutating func setPausedByOperator(_ paused: Bool, now: Instant) -> (changed: Bool, actions: [Action]) {
        var actions: [Action] = []
        switch (phase, paused) {
        case (.running, true):
            phase = .pausedByOperator
            actions.append(.setQueueSuspended(true))
            disarmProbes(&actions)
        case (.pausedByOperator, false):
            phase = .running
            actions.append(.setQueueSuspended(false))
            armProbesIfNeeded(now: now, &actions)
        default:
            return (false, actions)
        }
        return (true, actions)
    }

    /// A reload: new batch limits, retry bounds and budget (the budget ends an operator's `logctl throttle`), and
    /// perhaps other URLs.
    ///
    /// An endpoint is its URL: a place whose URL changed (a new URL, or the list reordered) starts afresh, standing
    /// by, with the counts that URL had (the metrics' counters must not go back); what was learnt of the place's old
    /// URL is dropped, as by a restart. If the active endpoint's place changed, or one preferred over it, or delivery
    /// was paused, delivery goes to the most preferred endpoint not resting. A request already on its way to a
    /// place whose URL changed is counted for the URL it went to and judged for none; a part isolating the refusal
    /// of such a place goes out as a batch of its own.
    mutating func reconfigure(_ settings: Settings, now: Instant) -> [Action] {
        precondition(settings.endpoints.count == endpoints.count, "endpoints are added or removed by a restart")
        var actions: [Action] = []
        limits = settings.limits
        let changed = endpoints.indices.filter { endpoints[$0].name != settings.endpoints[$0] }
        let activeName = endpoints[active].name
        for index in changed { countsByFormerURL[endpoints[index].name] = endpoints[index].totals }
        for index in changed {
            if endpoints[index].rest?.probe == .armed { actions.append(.cancelTimer(.probeEndpoint(index))) }
            let name = settings.endpoints[index]
            endpoints[index] = Endpoint(name: name, retry: RetryPolicy(bounds: settings.retry))
            endpoints[index].totals = countsByFormerURL.removeValue(forKey: name) ?? DeliveryCounts()
        }
        for index in endpoints.indices { endpoints[index].retry.bounds = settings.retry }
        // A part isolates the refusal of the URL that refused its batch; that URL's place has another now. Parts
        // wait in their class, or in an operation (whose work comes back to the class if it is cancelled).
        func detached(_ part: BatchPart) -> BatchPart {
            var part = part
            if let place = part.endpoint, changed.contains(place) { part.endpoint = nil }
            return part
        }
        for priorityClass in Array(classes.keys) {
            classes[priorityClass]!.parts = classes[priorityClass]!.parts.map(detached)
        }
        for id in Array(operations.keys) {
            if case .send(let part) = operations[id]!.work { operations[id]!.work = .send(detached(part)) }
        }
        budget.update(settings.budget, now: now)
        if let first = changed.first, first <= active || isPaused, phase != .draining {
            moveAfterReload(from: activeName, now: now, &actions)
        }
        actions += letBudgetWaitsGo(now: now)
        armProbesIfNeeded(now: now, &actions)
        return actions
    }

    /// `logctl throttle`: a byte budget in place of the configured one, or none at all, until the next reload.
    mutating func setThrottleOverride(_ override: ThrottleOverride?, now: Instant) -> [Action] {
        budget.setOverride(override, now: now)
        return letBudgetWaitsGo(now: now)
    }

    /// Shutdown begins: nothing new is created, timers are dropped, waiting operations are cancelled (the queue
    /// must be running for them to finish), running ones may finish.
    mutating func beginShutdown(now: Instant) -> [Action] {
        var actions: [Action] = []
        guard phase != .draining else { return actions }
        if phase == .pausedByOperator { actions.append(.setQueueSuspended(false)) }
        phase = .draining
        for priorityClass in PriorityClass.mostUrgentFirst where classes[priorityClass]?.wait != nil {
            endWait(priorityClass, now: now)
            actions.append(.cancelTimer(.endWait(priorityClass)))
        }
        disarmProbes(&actions)
        if case .paused(let pause, _) = link {
            actions.append(.cancelTimer(.endPause))
            link = .retrying(after: pause)
        }
        cancelWaiting(to: nil, &actions)
        if runningCount == 0 {
            actions.append(.wakeIdleWaiters)
        }
        return actions
    }

    /// Requests in flight outlived the shutdown timeout: cancel them (their records stay spooled).
    func shutdownTimedOut() -> [Action] {
        let running = operations.filter { if case .running = $0.value.state { true } else { false } }
        return [.cancel(running.keys.sorted())]
    }

    // MARK: What it shows

    /// Operations the queue is running.
    var runningCount: Int {
        operations.values.count { if case .running = $0.state { true } else { false } }
    }

    /// When the longest-running request began, if any runs.
    var oldestRequestStart: Instant? {
        operations.values.compactMap { if case .running(let since) = $0.state { since } else { nil } }.min()
    }

    /// Whether an operator paused uploads.
    var isPausedByOperator: Bool { phase == .pausedByOperator }

    /// The budget as configured (a reload's), without an operator's override.
    var configuredBudget: UploadRateBudget { budget.budget }

    /// The budget and the rate in force at `now`.
    func rateStatus(at now: Instant) -> UploadRateStatus { budget.status(at: now) }

    /// Counts since start and what delivery is doing at `now`, with wall-clock times for people.
    func statistics(at now: Instant, wallClock: Date) -> Shipper.Statistics {
        var statistics = Shipper.Statistics(
            totals: totals, operationsInFlight: runningCount, pausedByOperator: phase == .pausedByOperator,
            lastError: lastError, lastAcceptedAt: lastAcceptedAt, throttledSeconds: throttledSeconds)
        for (priorityClass, state) in classes {
            guard case .budget(_, let since) = state.wait else { continue }
            statistics.throttledSeconds[priorityClass, default: 0] += max(0, (now - since).seconds)
        }
        switch link {
        case .accepting:
            break
        case .paused(let pause, _):
            statistics.pause = pause
            statistics.pausedUntil = wallClock.addingTimeInterval((pause.until - now).seconds)
        case .retrying(let pause):
            statistics.lastFailure = pause
        }
        statistics.activeEndpoint = active
        statistics.endpoints = endpoints.indices.map { index in
            // An endpoint after the active one whose rest is over waits for nothing: delivery moves to it only
            // when the active one pauses, and then at once. It stands by, and is shown so.
            let rest = endpoints[index].rest.flatMap { rest in
                index > active && rest.pause.until <= now && !isPaused ? nil : rest
            }
            return Shipper.EndpointStatistics(
                name: endpoints[index].name, totals: endpoints[index].totals, rest: rest?.pause,
                restsUntil: rest.map { wallClock.addingTimeInterval(($0.pause.until - now).seconds) })
        }
        return statistics
    }

    // MARK: Deciding

    /// Creates waiting operations for a class until it has what it wants: one per slot while it is backlogged or
    /// has parts to send, one while it may have records; none while it waits, delivery is paused, or shutdown has
    /// begun.
    private mutating func fill(_ priorityClass: PriorityClass, now: Instant, _ actions: inout [Action]) {
        guard phase != .draining, let state = classes[priorityClass], state.wait == nil else { return }
        if case .paused = link { return }
        let wanted = state.isBacklogged || !state.parts.isEmpty ? slots : (state.hasRecords ? 1 : 0)
        var waiting = operations.values.count { $0.work.priorityClass == priorityClass && $0.state == .waiting }
        while waiting < wanted {
            guard let work = nextWork(priorityClass, now: now, &actions) else { return }
            // A resting endpoint whose rest is over takes the next claim as its probe, so that even a record now
            // and then finds out whether it is back; crash records stay with the endpoint known to work, and a
            // part of a refused batch with the endpoint whose refusal it is isolating.
            if priorityClass != .crash, case .claim = work, let endpoint = endpointDueForProbe(now: now) {
                probe(endpoint, with: work, &actions)
            } else {
                enqueue(work, to: active, &actions)
            }
            waiting += 1
        }
    }

    /// What a class sends next: a part of a refused batch, else a claim within the budget; `nil` when it has
    /// nothing, or must wait for the budget (it then waits).
    private mutating func nextWork(_ priorityClass: PriorityClass, now: Instant, _ actions: inout [Action])
        -> OperationWork?
    {
        if !(classes[priorityClass]?.parts.isEmpty ?? true) {
            return .send(classes[priorityClass]!.parts.removeFirst())
        }
        guard classes[priorityClass]?.hasRecords == true else { return nil }
        switch budget.admit(priorityClass, within: limits, now: now) {
        case .go(let grant):
            return .claim(priorityClass, grant)
        case .wait(let delay):
            wait(priorityClass, .budget(until: now + delay, since: now), &actions)
            return nil
        }
    }

    private mutating func enqueue(_ work: OperationWork, to endpoint: Int, _ actions: inout [Action]) {
        lastOperationID += 1
        let id = OperationID(rawValue: lastOperationID)
        let announcements = classes[work.priorityClass]?.announcements ?? 0
        operations[id] = TrackedOperation(
            work: work, endpoint: endpoint, endpointName: endpoints[endpoint].name, state: .waiting,
            announcementsAtCreation: announcements)
        actions.append(.enqueue(id, work, to: endpoint))
    }

    /// Every class may have records again (a pause or an operator's pause ended): one claim each, most urgent
    /// first, finds out.
    private mutating func letGoEveryClass(now: Instant, _ actions: inout [Action]) {
        for priorityClass in PriorityClass.mostUrgentFirst {
            classes[priorityClass, default: ClassState()].hasRecords = true
            fill(priorityClass, now: now, &actions)
        }
    }

    /// Cancels the operations waiting to go to `endpoint` (every one, when `nil`): they would go out into a pause,
    /// to an endpoint delivery moved away from, or after shutdown began.
    private mutating func cancelWaiting(to endpoint: Int?, _ actions: inout [Action]) {
        cancel(operations.filter { _, operation in
            operation.state == .waiting && (endpoint ?? operation.endpoint) == operation.endpoint
        }.keys.sorted(), &actions)
    }

    /// Cancels waiting operations `ids`.
    private mutating func cancel(_ ids: [OperationID], _ actions: inout [Action]) {
        guard !ids.isEmpty else { return }
        for id in ids { operations[id]?.state = .cancelled }
        actions.append(.cancel(ids))
    }

    private mutating func wait(_ priorityClass: PriorityClass, _ wait: Wait, _ actions: inout [Action]) {
        if case .budget(_, let since) = classes[priorityClass]?.wait, case .budget(let until, _) = wait {
            classes[priorityClass]?.wait = .budget(until: until, since: since)
        } else {
            classes[priorityClass, default: ClassState()].wait = wait
        }
        actions.append(.armTimer(.endWait(priorityClass), at: wait.until))
    }

    /// Ends a class's wait, counting the seconds it waited for the budget.
    private mutating func endWait(_ priorityClass: PriorityClass, now: Instant) {
        if case .budget(_, let since) = classes[priorityClass]?.wait {
            throttledSeconds[priorityClass, default: 0] += max(0, (now - since).seconds)
        }
        classes[priorityClass]?.wait = nil
    }

    /// Classes waiting for the budget are let go at once, to be measured again: against a new budget, or with
    /// tokens a claim did not need.
    private mutating func letBudgetWaitsGo(now: Instant) -> [Action] {
        var actions: [Action] = []
        guard phase != .draining else { return actions }
        for priorityClass in PriorityClass.mostUrgentFirst {
            guard case .budget = classes[priorityClass]?.wait else { continue }
            endWait(priorityClass, now: now)
            actions.append(.cancelTimer(.endWait(priorityClass)))
            fill(priorityClass, now: now, &actions)
        }
        return actions
    }

    /// Adds a request's counts to the link's totals and to those of the URL it went to, wherever that is listed
    /// now, and keeps the latest failed and accepted requests.
    private mutating func count(_ request: RequestReport, endpointNamed name: String) {
        totals += request.counts
        if let index = endpoints.firstIndex(where: { $0.name == name }) {
            endpoints[index].totals += request.counts
        } else {
            countsByFormerURL[name, default: DeliveryCounts()] += request.counts
        }
        // Latest by time, not by arrival: the other slot's request may finish after this one, older.
        if let failure = request.lastError, failure.at >= lastError?.at ?? .distantPast {
            lastError = failure
        }
        if let accepted = request.lastAcceptedAt, accepted > lastAcceptedAt ?? .distantPast {
            lastAcceptedAt = accepted
        }
    }

    /// What a request to the active endpoint means for the link.
    private mutating func judge(_ request: RequestReport, wasProbe: Bool, now: Instant, _ actions: inout [Action]) {
        switch request.outcome {
        case .accepted, .refusedRecords:
            endpoints[active].retry.answered()
            lastNoticed = nil
            switch link {
            case .paused(_, _) where wasProbe:
                // The probe got through: the pause ends, and what waited leaves in the queue's order.
                actions.append(.cancelTimer(.endPause))
                link = .accepting
                letGoEveryClass(now: now, &actions)
            case .retrying:
                link = .accepting
            case .accepting, .paused:
                break
            }
        case .failed(let error), .refusedEveryPart(let error):
            switch endpoints[active].retry.failed(error, jitter: jitter.next()) {
            case .retry:
                break
            case .slowDown:
                slowDown(for: error, sentAt: request.sentAt, wasProbe: wasProbe, now: now, &actions)
            case .pause(let delay, let cause, let isAskedByRemote):
                let pause = DeliveryPause(
                    until: now + delay, cause: cause, reason: error.description, isAskedByRemote: isAskedByRemote)
                begin(pause, wasProbe: wasProbe, now: now, &actions)
            }
        }
    }

    /// What a request to another endpoint than the active one means for that endpoint: a probe, or a request sent
    /// before delivery moved. An answer ends its rest, and delivery moves back to it if it is preferred (or the
    /// active one is paused); a failure makes a resting endpoint rest again, and any endpoint rest that a failure
    /// would have paused it for.
    private mutating func judgeElsewhere(
        _ request: RequestReport, endpoint: Int, now: Instant, _ actions: inout [Action]
    ) {
        switch request.outcome {
        case .accepted, .refusedRecords:
            endpoints[endpoint].retry.answered()
            guard let rest = endpoints[endpoint].rest else { return }
            if rest.probe == .armed { actions.append(.cancelTimer(.probeEndpoint(endpoint))) }
            endpoints[endpoint].rest = nil
            if phase != .draining && mayTakeDeliveryBack(endpoint) {
                move(to: endpoint, reason: nil, now: now, &actions)
            }
        case .failed(let error), .refusedEveryPart(let error):
            var pause = DeliveryPause(until: now, cause: .remoteUnavailable, reason: error.description)
            switch endpoints[endpoint].retry.failed(error, jitter: jitter.next()) {
            case .pause(let delay, let cause, let isAskedByRemote):
                (pause.until, pause.cause, pause.isAskedByRemote) = (now + delay, cause, isAskedByRemote)
            case .retry, .slowDown:
                // Noise from an endpoint in use; from one that rests (its probe), a sign it is still down.
                guard endpoints[endpoint].rest != nil else { return }
                pause.until = now + endpoints[endpoint].retry.backoff(jitter: jitter.next())
            }
            var rest = endpoints[endpoint].rest ?? Rest(pause: pause)
            pause.until = max(pause.until, rest.pause.until)
            rest.pause = pause
            if rest.probe == .armed {
                // Armed for the rest's old end: armed again for its new one.
                rest.probe = .idle
                actions.append(.cancelTimer(.probeEndpoint(endpoint)))
            }
            endpoints[endpoint].rest = rest
        }
    }

    /// The receiver is overloaded: the rate comes down, or, at its floor already, delivery pauses.
    private mutating func slowDown(
        for error: UploadError, sentAt: Instant, wasProbe: Bool, now: Instant, _ actions: inout [Action]
    ) {
        let answer = budget.overloaded(sentAt: sentAt, now: now)
        if answer == .atFloor {
            let delay = endpoints[active].retry.failedElsewhere(jitter: jitter.next())
            begin(DeliveryPause(until: now + delay, cause: .remoteUnavailable, reason: error.description),
                  wasProbe: wasProbe, now: now, &actions)
            return
        }
        if answer == .decreased { cancelClaimsLetThroughBefore(now: now, &actions) }
        let isRepeated = lastNoticed == error.description
        lastNoticed = error.description
        let rate = budget.effectiveBytesPerSecond(at: now).map { Int($0.rounded()) }
        actions.append(.log(.slowedDown(reason: error.description, bytesPerSecond: rate, isRepeated: isRepeated)))
    }

    /// The rate came down: claims waiting were let through at the rate before, and would go out at once, their
    /// refusals counted as news. Cancelled, their classes claim again at the lower rate. What they set aside was
    /// the old rate's, which the decrease spent, so none of it comes back.
    private mutating func cancelClaimsLetThroughBefore(now: Instant, _ actions: inout [Action]) {
        let exempt = budget.budget.exempt
        var letThrough: [OperationID] = []
        for (id, operation) in operations where operation.state == .waiting && operation.endpoint == active {
            guard case .claim(let priorityClass, var grant) = operation.work, !exempt.contains(priorityClass) else {
                continue
            }
            grant.reservedBytes = 0
            operations[id]?.work = .claim(priorityClass, grant)
            letThrough.append(id)
        }
        cancel(letThrough.sorted(), &actions)
    }

    /// The active endpoint pauses: delivery moves to the most preferred endpoint not resting, if there is one, and
    /// the one it leaves rests out the pause; else all delivery pauses until the pause ends. A pause already running
    /// longer is kept, with the newer reason. What waits in the queue is cancelled: it would go out into the pause.
    private mutating func begin(_ newPause: DeliveryPause, wasProbe: Bool, now: Instant, _ actions: inout [Action]) {
        guard phase != .draining else { return }
        var pause = newPause
        var probe = Probe.idle
        if case .paused(let current, let currentProbe) = link {
            // A probe that failed as the rest did says the remote is still down, not that the rest should wait
            // longer; a longer pause for another reason (a Retry-After, a refusal) is taken as it comes.
            let keepsEnd = current.until >= pause.until || (wasProbe && pause.allowsCrashProbes)
            pause.until = keepsEnd ? current.until : pause.until
            probe = currentProbe
        }
        link = .paused(pause, probe: probe)
        if let next = endpoints.indices.first(where: { $0 != active && !isResting($0, at: now) }) {
            move(to: next, reason: pause.reason, now: now, &actions)
            return
        }
        actions.append(.armTimer(.endPause, at: pause.until))
        cancelWaiting(to: active, &actions)
        let isRepeated = lastNoticed == pause.reason
        lastNoticed = pause.reason
        actions.append(.log(.paused(pause, isRepeated: isRepeated)))
    }

    /// Delivery moves to `endpoint`: what waits for the endpoint it leaves is cancelled, a pause of that one
    /// becomes its rest, and every class gets a claim for the new one.
    /// - Parameter reason: Why it leaves: the failure that paused it, or `nil` when `endpoint` answered its probe.
    private mutating func move(to endpoint: Int, reason: String?, now: Instant, _ actions: inout [Action]) {
        let left = active
        hand(
            to: endpoint, cancellingWaitingFor: left, leftRests: true,
            notice: .movedEndpoint(from: endpoints[left].name, to: endpoints[endpoint].name, reason: reason),
            now: now, &actions)
    }

    /// The active endpoint's place, or one preferred over it, has another URL after a reload, or delivery was paused
    /// and some place has a new URL: delivery starts over with the most preferred endpoint not resting (a changed
    /// place stands by), as at start. A paused active endpoint still listed rests out its pause, as when delivery
    /// moves away from it.
    /// - Parameter activeName: The URL delivery went to before the reload.
    private mutating func moveAfterReload(from activeName: String, now: Instant, _ actions: inout [Action]) {
        // A paused active endpoint that is still listed is about to rest: not a candidate.
        let leftRests = endpoints[active].name == activeName
        let next = endpoints.indices.first { !isResting($0, at: now) && !(leftRests && isPaused && $0 == active) }
            ?? active
        let name = endpoints[next].name
        hand(
            to: next, cancellingWaitingFor: nil, leftRests: leftRests,
            notice: name == activeName ? nil : .movedByReload(from: activeName, to: name), now: now, &actions)
    }

    /// Delivery goes to `endpoint`: what waits for `waitingFor` (for any endpoint when `nil`) is cancelled, a pause
    /// of the endpoint it leaves ends and, when `leftRests`, becomes that one's rest; `endpoint` takes delivery
    /// (`retrying` if it rested), and every class gets a claim for it.
    private mutating func hand(
        to endpoint: Int, cancellingWaitingFor waitingFor: Int?, leftRests: Bool, notice: Notice?, now: Instant,
        _ actions: inout [Action]
    ) {
        let left = active
        cancelWaiting(to: waitingFor, &actions)
        if case .paused(let pause, let probe) = link {
            actions.append(.cancelTimer(.endPause))
            if probe == .armed { actions.append(.cancelTimer(.probeForCrash)) }
            if leftRests { endpoints[left].rest = Rest(pause: pause) }
        }
        active = endpoint
        link = .accepting
        if let rest = endpoints[endpoint].rest {
            // Its rest is over, and nothing has been answered since: what goes next finds out.
            if rest.probe == .armed { actions.append(.cancelTimer(.probeEndpoint(endpoint))) }
            endpoints[endpoint].rest = nil
            link = .retrying(after: rest.pause)
        }
        if let notice { actions.append(.log(notice)) }
        letGoEveryClass(now: now, &actions)
    }

    /// Whether delivery moved away from `endpoint` and its rest lasts beyond `now`.
    private func isResting(_ endpoint: Int, at now: Instant) -> Bool {
        endpoints[endpoint].rest.map { $0.pause.until > now } ?? false
    }

    /// Whether delivery would move to `endpoint` once it answers: it is preferred over the active one, or the
    /// active one is paused.
    private func mayTakeDeliveryBack(_ endpoint: Int) -> Bool {
        if case .paused = link { return endpoint != active }
        return endpoint < active
    }

    /// Classes wait after the spool failed for them: the same backoff as the link's failures.
    private mutating func spoolFailed(
        _ failed: Set<PriorityClass>, reason: String, now: Instant, _ actions: inout [Action]
    ) {
        lastError = LastError(reason: reason, at: Date())
        let delay = endpoints[active].retry.failedElsewhere(jitter: jitter.next())
        for priorityClass in PriorityClass.mostUrgentFirst where failed.contains(priorityClass) {
            classes[priorityClass, default: ClassState()].hasRecords = true
            wait(priorityClass, .spool(until: now + delay), &actions)
        }
        actions.append(.log(.spoolFailed(reason: reason, retryAfter: delay)))
    }

    /// Arms the probes that waiting records call for: a crash record's while the active endpoint is paused (unless
    /// the pause ends first), and, while records other than crash ones wait, each resting endpoint's that may take
    /// delivery back, at the end of its rest.
    private mutating func armProbesIfNeeded(now: Instant, _ actions: inout [Action]) {
        guard phase == .running else { return }
        if case .paused(let pause, .idle) = link, pause.allowsCrashProbes, hasCrashToSend {
            let probeAt = now + Self.crashProbeInterval * (0.5 + jitter.next() / 2)
            if probeAt < pause.until {
                link = .paused(pause, probe: .armed)
                actions.append(.armTimer(.probeForCrash, at: probeAt))
            }
        }
        guard PriorityClass.mostUrgentFirst.contains(where: mayProbe(with:)) else { return }
        for endpoint in endpoints.indices where mayTakeDeliveryBack(endpoint) {
            guard let rest = endpoints[endpoint].rest, rest.probe == .idle else { continue }
            endpoints[endpoint].rest?.probe = .armed
            actions.append(.armTimer(.probeEndpoint(endpoint), at: max(now, rest.pause.until)))
        }
    }

    /// Drops the timers of armed probes (an operator's pause, shutdown); ``armProbesIfNeeded(now:_:)`` arms them
    /// again.
    private mutating func disarmProbes(_ actions: inout [Action]) {
        if case .paused(let pause, .armed) = link {
            link = .paused(pause, probe: .idle)
            actions.append(.cancelTimer(.probeForCrash))
        }
        for endpoint in endpoints.indices where endpoints[endpoint].rest?.probe == .armed {
            endpoints[endpoint].rest?.probe = .idle
            actions.append(.cancelTimer(.probeEndpoint(endpoint)))
        }
    }

    /// Lets one crash operation through the pause, if a crash record still waits.
    private mutating func sendCrashProbe(_ pause: DeliveryPause, now: Instant, _ actions: inout [Action]) {
        guard phase == .running, hasCrashToSend else { return }
        if !(classes[.crash]?.parts.isEmpty ?? true) {
            enqueue(.send(classes[.crash]!.parts.removeFirst()), to: active, &actions)
        } else {
            guard case .go(let grant) = budget.admit(.crash, within: limits, now: now) else { return }
            enqueue(.claim(.crash, grant), to: active, &actions)
        }
        link = .paused(pause, probe: .sending(OperationID(rawValue: lastOperationID)))
    }

    /// Lets one operation through to a resting endpoint that may take delivery back: the next work of the least
    /// urgent class that has some, crash records aside.
    private mutating func sendEndpointProbe(_ endpoint: Int, now: Instant, _ actions: inout [Action]) {
        guard phase == .running, mayTakeDeliveryBack(endpoint) else { return }
        for priorityClass in PriorityClass.mostUrgentFirst.reversed() where mayProbe(with: priorityClass) {
            guard let work = nextWork(priorityClass, now: now, &actions) else { continue }
            probe(endpoint, with: work, &actions)
            return
        }
    }

    /// A resting endpoint that may take delivery back, whose rest is over and whose probe is not on its way.
    private func endpointDueForProbe(now: Instant) -> Int? {
        guard phase == .running else { return nil }
        return endpoints.indices.first { endpoint in
            guard let rest = endpoints[endpoint].rest, rest.pause.until <= now, mayTakeDeliveryBack(endpoint)
            else { return false }
            if case .sending = rest.probe { return false }
            return true
        }
    }

    /// Sends `work` to a resting endpoint as its probe.
    private mutating func probe(_ endpoint: Int, with work: OperationWork, _ actions: inout [Action]) {
        if endpoints[endpoint].rest?.probe == .armed { actions.append(.cancelTimer(.probeEndpoint(endpoint))) }
        enqueue(work, to: endpoint, &actions)
        endpoints[endpoint].rest?.probe = .sending(OperationID(rawValue: lastOperationID))
    }

    /// Whether records of a class may probe a resting endpoint: any but crash records, which stay with the
    /// endpoint known to work (or, while it is paused, probe that one); and only by a claim, never by a part of a
    /// refused batch, whose verdict must come from the endpoint that refused it.
    private func mayProbe(with priorityClass: PriorityClass) -> Bool {
        guard priorityClass != .crash, let state = classes[priorityClass], state.wait == nil else { return false }
        return state.parts.isEmpty && state.hasRecords
    }

    private var hasCrashToSend: Bool { hasSomethingToSend(.crash) }

    /// Whether all delivery is paused (the active endpoint's pause, every other endpoint resting).
    private var isPaused: Bool {
        if case .paused = link { true } else { false }
    }

    /// Whether a class has records or parts to send and is not waiting.
    private func hasSomethingToSend(_ priorityClass: PriorityClass) -> Bool {
        guard let state = classes[priorityClass], state.wait == nil else { return false }
        return state.hasRecords || !state.parts.isEmpty
    }
}
