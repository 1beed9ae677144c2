import Foundation
import Testing

@testable import LogShip

/// The shipper's machine, event by event, in each state it can be in: accepting, paused by the remote (with and
/// without a crash probe), retrying after a pause, paused by an operator, draining at shutdown.
@Suite("Shipper state machine")
struct ShipperStateMachineTests {
    typealias Harness = ShipperHarness

    @Test("classes map to queue priorities in order")
    func queuePriorities() {
        let priorities = PriorityClass.mostUrgentFirst.map(\.queuePriority.rawValue)
        #expect(priorities == priorities.sorted(by: >))
        #expect(PriorityClass.crash.queuePriority == .veryHigh)
        #expect(PriorityClass.debug.queuePriority == .veryLow)
    }

    // MARK: Records available

    @Test("records available, accepting: one claim per class, most urgent first; again, nothing more")
    func recordsAvailableAccepting() {
        var harness = Harness()
        harness.recordsAvailable([.debug, .crash, .info, .error])
        #expect(harness.waitingClasses == [.crash, .error, .info, .debug])
        harness.recordsAvailable([.crash, .info])
        #expect(harness.waiting.count == 4, "one waiting operation per class is enough")
        #expect(harness.waiting.allSatisfy { if case .claim = $0.work { true } else { false } })
    }

    @Test("records available while paused: nothing enqueued; a crash record arms a probe within a second")
    func recordsAvailablePaused() throws {
        var harness = try Self.paused()
        harness.recordsAvailable([.info, .error])
        #expect(harness.waitingClasses.isEmpty)
        #expect(harness.timers[.probeForCrash] == nil, "no crash record waits")
        harness.recordsAvailable([.crash])
        #expect(harness.waitingClasses.isEmpty)
        let probe = try #require(harness.timers[.probeForCrash])
        #expect(probe > harness.now && probe <= harness.now + .seconds(1))
    }

    @Test("records available while an operator paused uploads: enqueued into the suspended queue, no probe")
    func recordsAvailableOperatorPaused() {
        var harness = Harness()
        harness.apply(harness.machine.setPausedByOperator(true, now: harness.now).actions)
        #expect(harness.isSuspended)
        harness.recordsAvailable([.crash, .info])
        #expect(harness.waitingClasses == [.crash, .info])
        let started = harness.startNext()
        #expect(started == nil, "the queue is suspended")
        #expect(harness.timers.isEmpty)
    }

    @Test("records available while draining: nothing")
    func recordsAvailableDraining() {
        var harness = Harness()
        harness.apply(harness.machine.beginShutdown(now: harness.now))
        harness.recordsAvailable(Set(PriorityClass.allCases))
        #expect(harness.waiting.isEmpty && harness.timers.isEmpty)
    }

    // MARK: Claims

    @Test("a claim that leaves records behind keeps one operation per slot waiting; one that leaves none, no more")
    func claims() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        let first = try harness.start()
        harness.claimed(first, moreLeft: true)
        #expect(harness.waitingClasses == [.info, .info], "one waiting per slot")
        let second = try harness.start()
        harness.claimed(second, moreLeft: true)
        #expect(harness.waitingClasses == [.info, .info], "refilled at once")
        let third = try harness.start(slots: 3)
        harness.claimed(third, moreLeft: false)
        #expect(harness.waitingClasses == [.info], "no backlog: the one waiting is enough")
        #expect(harness.machine.runningCount == 3)
    }

    @Test("a claim that finds nothing ends the class's claims, unless records were announced since it was created")
    func emptyClaims() throws {
        var harness = Harness()
        harness.recordsAvailable([.warning])
        let first = try harness.start()
        harness.recordsAvailable([.warning])  // a commit lands before the claim has been heard of
        harness.claimedNothing(first)
        harness.finish(first, .nothingToSend)
        #expect(harness.waitingClasses == [.warning], "the newer records get a claim")
        let second = try harness.start()
        harness.claimedNothing(second)
        harness.finish(second, .nothingToSend)
        #expect(harness.waiting.isEmpty)
    }

    // MARK: Finished: accepted

    @Test("an accepted request is counted; a backlogged class's next operation waits already")
    func accepted() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        let operation = try harness.start()
        harness.claimed(operation, moreLeft: true)
        harness.finish(operation, Reports.accepted(10, at: harness.now))
        let statistics = harness.machine.statistics(at: harness.now, wallClock: Date())
        #expect(statistics.totals.delivered == 10 && statistics.totals.requests == 1)
        #expect(statistics.lastAcceptedAt != nil)
        #expect(harness.waitingClasses == [.info, .info])
    }

    @Test("after a pause ends, the first accepted request shows the remote accepting again")
    func acceptedAfterPause() throws {
        var harness = try Self.paused()
        harness.advance(by: 60)
        #expect(harness.machine.statistics(at: harness.now, wallClock: Date()).lastFailure != nil, "retrying")
        let operation = try harness.start()
        harness.finish(operation, Reports.accepted(at: harness.now))
        let statistics = harness.machine.statistics(at: harness.now, wallClock: Date())
        #expect(statistics.lastFailure == nil && statistics.pause == nil)
    }

    // MARK: Finished: failures

    @Test("a 503 here and there is sent again at once: no pause, no lower rate; three failures in a row pause")
    func noise() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        for attempt in 1...3 {
            let operation = try harness.start()
            harness.claimed(operation, moreLeft: false)
            harness.finish(operation, Reports.failed(Reports.unavailable, at: harness.now))
            if attempt < 3 {
                #expect(!harness.isPaused, "attempt \(attempt)")
                #expect(harness.waitingClasses == [.info], "the records go again at once")
            }
        }
        #expect(harness.isPaused, "a remote that fails everything is down")
        #expect(harness.machine.rateStatus(at: harness.now).effectiveBytesPerSecond == nil, "no rate was lowered")

        var recovering = Harness()
        recovering.recordsAvailable([.info])
        for _ in 1...2 {
            let operation = try recovering.start()
            recovering.finish(operation, Reports.failed(Reports.unavailable, at: recovering.now))
        }
        let accepted = try recovering.start()
        recovering.finish(accepted, Reports.accepted(at: recovering.now))
        let again = try recovering.start()
        recovering.finish(again, Reports.failed(Reports.unavailable, at: recovering.now))
        #expect(!recovering.isPaused, "an accepted request starts the count again")
    }

    @Test("""
        a 429 lowers the rate and delivery goes on; what waited at the rate before is cancelled, and the next request \
        waits for the lower rate
        """)
    func tooManyRequests() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        for _ in 0..<20 {
            let operation = try harness.start()
            harness.claimed(operation, spoolBytes: 10_000, moreLeft: true)
            harness.finish(operation, Reports.accepted(100, spoolBytes: 10_000, at: harness.now))
            harness.advance(by: 0.1)
        }
        let refused = try harness.start()
        harness.claimed(refused, spoolBytes: 10_000, moreLeft: true)
        #expect(harness.waitingClasses == [.info, .info], "a claim per slot waits, let through with no limit")
        harness.finish(refused, Reports.failed(Reports.tooMany, spoolBytes: 10_000, at: harness.now))
        #expect(!harness.isPaused)
        #expect(harness.waitingClasses.isEmpty, "the claim let through before the 429 was cancelled")
        let endWait = try #require(harness.timers[.endWait(.info)], "the class waits for the lower rate")
        #expect(endWait > harness.now)
        let status = harness.machine.rateStatus(at: harness.now)
        #expect(status.isHeldDownByReceiver)
        // 100 kB/s were accepted over the last two seconds: the limit is a little under that.
        let rate = try #require(status.effectiveBytesPerSecond)
        #expect(rate > 70_000 && rate < 100_000, "\(rate)")
        guard case .slowedDown = harness.notices.last else {
            Issue.record("no notice of the lower rate: \(harness.notices)")
            return
        }
    }

    @Test("a refused connection pauses everything: what waits is cancelled, nothing is enqueued until the pause ends")
    func outage() throws {
        var harness = Harness()
        harness.recordsAvailable([.info, .warning])
        let operation = try harness.start()
        harness.finish(operation, Reports.failed(Reports.refusedConnection, at: harness.now))
        #expect(harness.isPaused)
        #expect(harness.waitingClasses.isEmpty, "the waiting info operation was cancelled")
        #expect(harness.waiting.allSatisfy { $0.isCancelled })
        let end = try #require(harness.timers[.endPause])
        #expect(end >= harness.now + .milliseconds(500) && end <= harness.now + .seconds(1), "the first backoff")
        while harness.startNext() != nil {}
        #expect(harness.waiting.isEmpty, "the cancelled operations finished")
        harness.recordsAvailable([.error])
        #expect(harness.waitingClasses.isEmpty)
        harness.advance(to: end)
        #expect(Set(harness.waitingClasses) == Set(PriorityClass.allCases), "one claim per class finds out")
    }

    @Test("Retry-After pauses for what the remote asked, capped, and no crash record probes before its end")
    func retryAfter() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        let operation = try harness.start()
        harness.finish(operation, Reports.failed(Reports.retryAfter(120), at: harness.now))
        let end = try #require(harness.timers[.endPause])
        #expect(end == harness.now + .seconds(120))
        harness.recordsAvailable([.crash])
        #expect(harness.timers[.probeForCrash] == nil, "the remote said how long to wait")

        var capped = Harness()
        capped.recordsAvailable([.info])
        let day = try capped.start()
        capped.finish(day, Reports.failed(Reports.retryAfter(86_400), at: capped.now))
        #expect(capped.timers[.endPause] == capped.now + .seconds(300), "upload.retry_after_max")
    }

    @Test("a refused credential pauses with the endpoint's cause and no probe")
    func endpointRefused() throws {
        var harness = Harness()
        harness.recordsAvailable([.info, .crash])
        let crash = try harness.start()
        harness.finish(crash, Reports.failed(Reports.unauthorized, at: harness.now))
        let pause = try #require(harness.machine.statistics(at: harness.now, wallClock: Date()).pause)
        #expect(pause.cause == .endpointRefused && !pause.allowsCrashProbes)
        #expect(harness.timers[.probeForCrash] == nil)
    }

    @Test("a longer pause extends the current one; a shorter one keeps its end but shows the newer reason")
    func overlappingPauses() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        let first = try harness.start()
        harness.claimed(first, moreLeft: true)
        let second = try harness.start()
        harness.finish(first, Reports.failed(Reports.retryAfter(100), at: harness.now))
        harness.finish(second, Reports.failed(Reports.refusedConnection, at: harness.now))
        let pause = try #require(harness.machine.statistics(at: harness.now, wallClock: Date()).pause)
        #expect(pause.until == harness.now + .seconds(100) && pause.reason.contains("connection refused"))
    }

    @Test("refused records come back as parts, sent before new claims of their class, each as an operation")
    func parts() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        let operation = try harness.start()
        harness.claimed(operation, moreLeft: false)
        let (refusal, first, second) = Reports.refusedInHalves(at: harness.now)
        harness.finish(operation, refusal)
        #expect(!harness.isPaused, "the link works: the remote answered")
        let sent = harness.waiting.compactMap { if case .send(let part) = $0.work { part.batch } else { nil } }
        #expect(sent == [first, second])
    }

    @Test("a cancelled part goes back before the parts still to send; a cancelled claim gives its grant back")
    func cancelledParts() throws {
        var harness = Harness()
        harness.recordsAvailable([.info])
        let operation = try harness.start()
        let (refusal, first, second) = Reports.refusedInHalves(at: harness.now)
        harness.finish(operation, refusal)
        let part = try harness.start()
        harness.finish(part, .cancelled)
        let queued = harness.waiting.compactMap { if case .send(let part) = $0.work { part.batch } else { nil } }
        #expect(queued == [second, first], "the cancelled part waits again")
    }

    // MARK: Finished: the spool

    @Test("a spool failure makes the class wait the backoff, then it is claimed again; status says why")
    func spoolFailure() throws {
        var harness = Harness()
        harness.recordsAvailable([.warning])
        let operation = try harness.start()
        harness.finish(operation, .spoolFailed(reason: "disk I/O error"))
        #expect(harness.waitingClasses.isEmpty)
        let end = try #require(harness.timers[.endWait(.warning)])
        #expect(
            harness.machine.statistics(at: harness.now, wallClock: Date()).lastError?.reason.contains("disk I/O")
                == true)
        harness.advance(to: end)
        #expect(harness.waitingClasses == [.warning])

        harness.apply(harness.machine.acknowledgementsFailed([.error], reason: "disk full", now: harness.now))
        #expect(harness.timers[.endWait(.error)] != nil, "delivered records back: their class waits too")
    }

    // MARK: Timers

    @Test("""
        while a crash record waits on a paused remote, a crash operation alone probes about every second; its delivery \
        ends the pause
        """)
    func crashProbe() throws {
        var harness = try Self.paused()
        harness.recordsAvailable([.info, .crash])
        let end = try #require(harness.timers[.endPause])
        let probeAt = try #require(harness.timers[.probeForCrash])
        harness.advance(to: probeAt)
        #expect(harness.waitingClasses == [.crash], "the probe alone")
        let probe = try harness.start()
        harness.claimed(probe, moreLeft: true)
        harness.finish(probe, Reports.failed(Reports.refusedConnection, at: harness.now))
        let pause = try #require(harness.machine.statistics(at: harness.now, wallClock: Date()).pause)
        #expect(pause.until == end, "a probe failing as the rest did does not lengthen the pause")
        let next = try #require(harness.timers[.probeForCrash])
        #expect(next > harness.now && next <= harness.now + .seconds(1))
        harness.advance(to: next)
        let second = try harness.start()
        harness.finish(second, Reports.accepted(at: harness.now))
        #expect(!harness.isPaused && harness.timers[.endPause] == nil)
        #expect(Set(harness.waitingClasses) == Set(PriorityClass.allCases), "what waited leaves in class order")
    }

    @Test("a class waiting for the budget is let go when its wait ends or the budget changes; its wait is counted")
    func budgetWait() throws {
        var harness = Harness(budget: UploadRateBudget(bytesPerSecond: 10_000, burstSeconds: 1))
        harness.recordsAvailable([.info])
        #expect(harness.waitingClasses.isEmpty, "the bucket starts empty")
        let end = try #require(harness.timers[.endWait(.info)])
        harness.advance(by: 0.1)
        let waited = harness.machine.statistics(at: harness.now, wallClock: Date()).throttledSeconds[.info] ?? 0
        #expect(abs(waited - 0.1) < 0.001)
        harness.advance(to: end)
        #expect(harness.waitingClasses == [.info])

        var changed = Harness(budget: UploadRateBudget(bytesPerSecond: 10_000))
        changed.recordsAvailable([.info])
        #expect(changed.waitingClasses.isEmpty)
        changed.apply(changed.machine.setThrottleOverride(.off, now: changed.now))
        #expect(changed.waitingClasses == [.info] && changed.timers[.endWait(.info)] == nil)
    }

    @Test("a claim that takes less than its grant set aside lets the class waiting for the rest go sooner")
    func smallClaimGivesBack() throws {
        var harness = Harness(budget: UploadRateBudget(bytesPerSecond: 1_000_000, burstSeconds: 1))
        harness.recordsAvailable([.info])
        harness.advance(to: try #require(harness.timers[.endWait(.info)]))
        let first = try harness.start()
        harness.claimed(first, spoolBytes: 250_000, moreLeft: true)
        // A backlog: each slot's claim waits for a quarter second of the budget.
        harness.advance(to: try #require(harness.timers[.endWait(.info)]))
        let second = try harness.start()
        let slow = try #require(harness.timers[.endWait(.info)], "the next claim waits for the next quarter second")
        #expect(slow >= harness.now + .milliseconds(240))
        harness.claimed(second, spoolBytes: 10_000, moreLeft: true)
        let sooner = try #require(harness.timers[.endWait(.info)])
        #expect(sooner <= harness.now + .milliseconds(20), "240 kB came back: it waits for the last 10 kB only")
    }

    @Test("crash records are exempt from the budget: they never wait for it")
    func crashExempt() {
        var harness = Harness(budget: UploadRateBudget(bytesPerSecond: 10_000))
        harness.recordsAvailable([.crash, .info])
        #expect(harness.waitingClasses == [.crash])
    }

    // MARK: Operator

    @Test("an operator's pause suspends the queue and holds crash records too; a resume lets it run")
    func operatorPause() throws {
        var harness = try Self.paused()
        harness.recordsAvailable([.crash])
        #expect(harness.timers[.probeForCrash] != nil)
        let (changed, actions) = harness.machine.setPausedByOperator(true, now: harness.now)
        harness.apply(actions)
        #expect(changed && harness.isSuspended && harness.timers[.probeForCrash] == nil)
        let again = harness.machine.setPausedByOperator(true, now: harness.now)
        #expect(!again.changed, "paused already")
        harness.apply(harness.machine.setPausedByOperator(false, now: harness.now).actions)
        #expect(!harness.isSuspended && harness.timers[.probeForCrash] != nil, "the probe is armed again")
    }

    // MARK: Shutdown

    @Test("shutdown cancels what waits, drops timers, resumes the queue, creates nothing, and wakes when idle")
    func shutdown() throws {
        var harness = Harness()
        harness.recordsAvailable([.info, .warning])
        let running = try harness.start()
        harness.apply(harness.machine.setPausedByOperator(true, now: harness.now).actions)
        harness.apply(harness.machine.beginShutdown(now: harness.now))
        #expect(!harness.isSuspended, "waiting operations need a running queue to finish")
        #expect(harness.waiting.allSatisfy { $0.isCancelled } && harness.timers.isEmpty)
        #expect(harness.wokenIdleWaiters == 0, "a request is in flight")
        harness.apply(harness.machine.shutdownTimedOut())
        #expect(harness.running.allSatisfy { $0.isCancelled })
        harness.finish(running, .cancelled)
        #expect(harness.wokenIdleWaiters == 1)
        harness.recordsAvailable([.crash])
        #expect(harness.waitingClasses.isEmpty)
    }

    // MARK: Random schedules

    @Test("""
        random schedules keep the invariants and deliver everything: two in flight, nothing sent into a pause but a \
        crash probe, crash first
        """)
    func randomSchedules() throws {
        for seed in UInt64(1)...40 {
            var simulation = Simulation(seed: seed)
            for _ in 0..<400 { try simulation.step() }
            try simulation.drainToEmpty()
            #expect(simulation.delivered == simulation.arrived, "seed \(seed)")
        }
    }

    @Test("""
        random schedules with two endpoints that go down and come back deliver everything once; a resting endpoint \
        gets its probe alone
        """)
    func randomFailoverSchedules() throws {
        for seed in UInt64(1)...40 {
            var simulation = Simulation(seed: seed, endpoints: 2)
            for _ in 0..<400 { try simulation.step() }
            try simulation.drainToEmpty()
            #expect(simulation.delivered == simulation.arrived, "seed \(seed)")
            #expect(simulation.moves > 0, "seed \(seed): delivery never moved")
        }
    }

    /// A harness whose remote refused a connection: paused for 30 to 60 seconds (the first backoff of a minute).
    static func paused() throws -> Harness {
        var harness = Harness(retry: RetryPolicy.Bounds(
            initial: .seconds(60), maximum: .seconds(600), retryAfterMaximum: .seconds(300)))
        harness.recordsAvailable([.debug])
        let operation = try harness.start()
        harness.finish(operation, Reports.failed(Reports.refusedConnection, at: harness.now))
        while harness.startNext() != nil {}
        return harness
    }
}

/// A random schedule of arrivals, starts, answers and time, against a spool of counts and a queue of two slots;
/// with more than one endpoint, endpoints also go down (refusing connections) and come back.
private struct Simulation {
    var harness: ShipperHarness
    var jitter: Jitter
    /// Whether each endpoint refuses connections now.
    var isDown: [Bool]
    /// How often delivery moved from one endpoint to another.
    var moves: Int { harness.notices.count { if case .movedEndpoint = $0 { true } else { false } } }
    /// Unclaimed records per class.
    var spool: [PriorityClass: Int] = [:]
    /// Records each running operation claimed.
    var claims: [ShipperStateMachine.OperationID: Int] = [:]
    var arrived = 0
    var delivered = 0
    let batchLimit = 4

    init(seed: UInt64, endpoints: Int = 1) {
        jitter = Jitter(seed: seed)
        harness = ShipperHarness(endpoints: (0..<endpoints).map { "https://\($0).example/ingest" })
        isDown = Array(repeating: false, count: endpoints)
    }

    mutating func roll(_ sides: Int) -> Int { min(Int(jitter.next() * Double(sides)), sides - 1) }

    mutating func step() throws {
        switch roll(10) {
        case 0 where isDown.count > 1:
            let endpoint = roll(isDown.count)
            isDown[endpoint].toggle()
        case 0, 1: arrive()
        case 2, 3, 4: try start()
        case 5, 6, 7: try finishOne(allowFailures: true)
        default: harness.advance(by: Double(roll(3000)) / 1000)
        }
        try checkInvariants()
    }

    mutating func drainToEmpty() throws {
        isDown = isDown.map { _ in false }
        var steps = 0
        while spool.values.contains(where: { $0 > 0 }) || !harness.running.isEmpty {
            steps += 1
            guard steps < 100_000 else { throw SimulationError("records left behind: \(spool)") }
            if !harness.running.isEmpty {
                try finishOne(allowFailures: false)
            } else if !harness.isSuspended && !harness.waiting.isEmpty {
                try start()
            } else {
                guard let next = harness.timers.values.min() else { throw SimulationError("stuck: \(spool)") }
                harness.advance(to: next)
            }
            try checkInvariants()
        }
    }

    mutating func arrive() {
        let priorityClass = PriorityClass.allCases[roll(5)]
        let count = roll(5) + 1
        spool[priorityClass, default: 0] += count
        arrived += count
        harness.recordsAvailable([priorityClass])
    }

    mutating func start() throws {
        let pausedBefore = harness.isPaused
        let active = harness.machine.statistics(at: harness.now, wallClock: Date()).activeEndpoint
        guard let operation = harness.startNext() else { return }
        if pausedBefore && operation.endpoint == active {
            #expect(operation.priorityClass == .crash, "nothing but a crash probe starts while delivery is paused")
        }
        let more = harness.waiting.filter { !$0.isCancelled && $0.priorityClass > operation.priorityClass }
        #expect(more.isEmpty, "\(operation.priorityClass) started while \(more.map(\.priorityClass)) waited")
        guard case .claim(let priorityClass, _) = operation.work else {
            throw SimulationError("no parts in this simulation")
        }
        let taken = min(spool[priorityClass, default: 0], batchLimit)
        spool[priorityClass, default: 0] -= taken
        if taken == 0 {
            harness.claimedNothing(operation)
            harness.finish(operation, .nothingToSend)
            return
        }
        claims[operation.id] = taken
        harness.claimed(operation, moreLeft: spool[priorityClass, default: 0] > 0)
    }

    mutating func finishOne(allowFailures: Bool) throws {
        guard !harness.running.isEmpty else { return }
        let operation = harness.running[roll(harness.running.count)]
        let taken = claims.removeValue(forKey: operation.id) ?? 0
        let outcome = isDown[operation.endpoint] ? 17 : allowFailures ? roll(20) : 0
        switch outcome {
        case 0..<15:
            delivered += taken
            harness.finish(operation, Reports.accepted(taken, at: harness.now))
        case 15..<17:
            spool[operation.priorityClass, default: 0] += taken
            harness.finish(operation, Reports.failed(Reports.unavailable, at: harness.now))
        case 17..<19:
            spool[operation.priorityClass, default: 0] += taken
            harness.finish(operation, Reports.failed(Reports.refusedConnection, at: harness.now))
        default:
            spool[operation.priorityClass, default: 0] += taken
            harness.finish(operation, .spoolFailed(reason: "disk I/O error"))
        }
    }

    func checkInvariants() throws {
        guard harness.running.count <= 2 else { throw SimulationError("\(harness.running.count) in flight") }
        let active = harness.machine.statistics(at: harness.now, wallClock: Date()).activeEndpoint
        for priorityClass in PriorityClass.allCases {
            let waiting = harness.waiting.count {
                !$0.isCancelled && $0.priorityClass == priorityClass && $0.endpoint == active
            }
            guard waiting <= 2 else { throw SimulationError("\(waiting) \(priorityClass) operations waiting") }
        }
        for endpoint in isDown.indices where endpoint != active {
            let waiting = harness.waiting.count { !$0.isCancelled && $0.endpoint == endpoint }
            guard waiting <= 1 else { throw SimulationError("\(waiting) operations wait for resting \(endpoint)") }
        }
    }
}

private struct SimulationError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
