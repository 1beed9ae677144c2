import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

/// The shipper's decisions with a fake clock and no queue, spool or network.
@Suite("Shipper state machine")
struct ShipperStateMachineTests {
    typealias Machine = ShipperStateMachine
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func pause(_ seconds: TimeInterval, from date: Date, cause: DeliveryPause.Cause = .remoteUnavailable) -> DeliveryPause {
        DeliveryPause(until: date.addingTimeInterval(seconds), cause: cause, reason: "HTTP 503")
    }

    func report(delivered: Int = 0, pause: DeliveryPause? = nil) -> DeliveryReport {
        var report = DeliveryReport()
        report.counts.delivered = delivered
        report.counts.requests = 1
        report.counts.failedRequests = pause == nil ? 0 : 1
        report.pause = pause
        return report
    }

    @Test("classes map to queue priorities in order")
    func queuePriorities() {
        let priorities = PriorityClass.mostUrgentFirst.map(\.queuePriority.rawValue)
        #expect(priorities == priorities.sorted(by: >))
        #expect(PriorityClass.crash.queuePriority == .veryHigh)
        #expect(PriorityClass.debug.queuePriority == .veryLow)
    }

    @Test("a burst across classes enqueues one operation per class, most urgent first")
    func burst() {
        var machine = Machine()
        let actions = machine.recordsAvailable([.debug, .crash, .info, .error], now: t0)
        #expect(actions.enqueue.map(\.priorityClass) == [.crash, .error, .info, .debug])
        #expect(machine.recordsAvailable([.crash, .info], now: t0).enqueue.isEmpty, "one waiting operation per class")
        #expect(machine.waitingClasses.count == 4)
    }

    @Test("a backlogged class keeps one operation per slot waiting: on claim, and on every start")
    func backlog() throws {
        var machine = Machine()
        let first = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
        let started = machine.operationStarted(first, now: t0)
        #expect(started.proceed && started.actions.enqueue.isEmpty, "no backlog known yet")
        let standbys = machine.claimed(first, moreLeft: true).enqueue
        #expect(standbys.map(\.priorityClass) == [.info, .info], "one waiting per slot")

        let second = machine.operationStarted(standbys[0].id, now: t0)
        #expect(second.proceed)
        #expect(second.actions.enqueue.map(\.priorityClass) == [.info], "queued before it even claims")
        #expect(machine.claimed(standbys[0].id, moreLeft: false).enqueue.isEmpty, "enough are waiting already")

        let thirdStart = machine.operationStarted(standbys[1].id, now: t0)
        #expect(thirdStart.proceed && thirdStart.actions.enqueue.isEmpty, "the backlog is gone")
        #expect(machine.runningCount == 3)
    }

    @Test("an operation goes on to its class's next batch while the class has a backlog; each batch is counted once")
    func continuing() throws {
        var machine = Machine()
        let id = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(id, now: t0)
        _ = machine.claimed(id, moreLeft: true)
        let first = machine.operationDelivered(id, report(delivered: 3), now: t0 + 1)
        #expect(first)
        #expect(machine.oldestBatchStart == t0 + 1, "the watchdog measures the batch under way")
        _ = machine.claimed(id, moreLeft: true)
        let second = machine.operationDelivered(id, report(delivered: 3), now: t0 + 2)
        #expect(second)
        _ = machine.claimed(id, moreLeft: false)
        let third = machine.operationDelivered(id, report(delivered: 2), now: t0 + 3)
        #expect(!third, "the class has nothing left")
        #expect(machine.totals.delivered == 6 && machine.totals.requests == 2, "the last batch not yet")
        _ = machine.operationFinished(id, .delivered(.attempted(report(delivered: 2))), now: t0 + 3)
        #expect(machine.totals.delivered == 8 && machine.totals.requests == 3)
        #expect(machine.runningCount == 0)
    }

    @Test("an operation stops after its batch for a waiting more urgent class, a pause, an operator, or shutdown")
    func stoppingAfterABatch() throws {
        // One info operation with a backlog, running; `interfere` changes one thing, then it asks to go on.
        func afterOneBatch(_ interfere: (inout Machine, Machine.OperationID) -> DeliveryReport) throws -> Bool {
            var machine = Machine()
            let id = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
            _ = machine.operationStarted(id, now: t0)
            _ = machine.claimed(id, moreLeft: true)
            let report = interfere(&machine, id)
            return machine.operationDelivered(id, report, now: t0 + 1)
        }
        #expect(try afterOneBatch { _, _ in report(delivered: 1) }, "nothing interferes")
        #expect(try afterOneBatch { machine, _ in
            _ = machine.recordsAvailable([.debug], now: t0)
            return report(delivered: 1)
        }, "a less urgent class waits its turn")
        #expect(try !afterOneBatch { machine, _ in
            _ = machine.recordsAvailable([.crash], now: t0)
            return report(delivered: 1)
        }, "a crash operation waits: the slot goes to it")
        #expect(try !afterOneBatch { _, _ in report(pause: pause(5, from: t0)) }, "its own request failed")
        #expect(try !afterOneBatch { machine, _ in
            let other = machine.recordsAvailable([.debug], now: t0).enqueue.map(\.id)
            _ = machine.operationStarted(other[0], now: t0)
            _ = machine.operationFinished(other[0], .delivered(.attempted(report(pause: pause(5, from: t0)))), now: t0)
            return report(delivered: 1)
        }, "another operation's request failed and paused delivery")
        #expect(try !afterOneBatch { machine, _ in
            _ = machine.setPausedByOperator(true, now: t0)
            return report(delivered: 1)
        }, "logctl pause")
        #expect(try !afterOneBatch { machine, _ in
            _ = machine.beginShutdown(now: .now)
            return report(delivered: 1)
        }, "shutdown began")
        #expect(try !afterOneBatch { _, _ in
            var failed = report(delivered: 0)
            failed.spoolFailedUntil = t0 + 2
            return failed
        }, "the spool could not settle the batch")
    }

    @Test("a class whose oldest record waits is blocked until then; an early timer is re-armed")
    func blockedClass() throws {
        var machine = Machine()
        let id = try #require(machine.recordsAvailable([.warning], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(id, now: t0)
        _ = machine.claimed(id, moreLeft: false)
        let finished = machine.operationFinished(id, .delivered(.waiting(until: t0 + 5)), now: t0)
        let (timer, date) = try #require(finished.armTimers.first)
        #expect(date == t0 + 5)
        #expect(machine.recordsAvailable([.warning], now: t0).enqueue.isEmpty, "blocked: no operation")

        let early = machine.timerFired(timer, now: t0 + 4)
        #expect(early.enqueue.isEmpty && early.armTimers.map(\.date) == [t0 + 5])
        #expect(machine.timerFired(timer, now: t0 + 5).enqueue.map(\.priorityClass) == [.warning])
        #expect(machine.timerFired(timer, now: t0 + 6).isEmpty, "a timer fires once")
    }

    @Test("a class waiting for the budget is let go at once when the budget changes; its wait is counted")
    func budgetChangeEndsTheWait() throws {
        var machine = Machine()
        let id = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(id, now: t0)
        let finished = machine.operationFinished(id, .delivered(.throttled(until: t0 + 600)), now: t0)
        let (timer, _) = try #require(finished.armTimers.first)
        #expect(machine.recordsAvailable([.info], now: t0).enqueue.isEmpty, "waiting for the budget")
        let changed = machine.budgetChanged(now: t0 + 2)
        #expect(changed.cancelTimers == [timer])
        #expect(changed.enqueue.map(\.priorityClass) == [.info])
        #expect(machine.secondsThrottled(now: t0 + 10)[.info] == 2)
        #expect(machine.budgetChanged(now: t0 + 3).isEmpty, "nothing waits any more")
    }

    @Test("a pause suspends the queue, keeps the class's operation waiting, and declines one started meanwhile")
    func pauseAndResume() throws {
        var machine = Machine()
        let first = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(first, now: t0)
        _ = machine.claimed(first, moreLeft: false)
        let crash = try #require(machine.recordsAvailable([.crash], now: t0).enqueue.first?.id)

        let paused = machine.operationFinished(first, .delivered(.attempted(report(pause: pause(10, from: t0)))), now: t0)
        #expect(paused.suspensions == [true] && paused.first?.isQueueSuspension == true && machine.isQueueSuspended, "suspended first")
        #expect(paused.enqueue.map(\.priorityClass) == [.info], "the released batch needs a waiting operation")
        let (endPause, date) = try #require(paused.armTimers.first)
        #expect(date == t0 + 10)
        guard case .paused(let shown, _, _) = machine.remote else { Issue.record("remote \(machine.remote)"); return }
        #expect(shown.reason == "HTTP 503")

        // The queue was starting the crash operation as the pause began.
        let declined = machine.operationStarted(crash, now: t0 + 1)
        #expect(!declined.proceed)
        #expect(declined.actions.enqueue.map(\.priorityClass) == [.crash], "replaced, still waiting")
        #expect(machine.operationFinished(crash, .delivered(.nothingToSend), now: t0 + 1).isEmpty)

        let resumed = machine.timerFired(endPause, now: t0 + 10)
        #expect(resumed.suspensions == [false] && !machine.isQueueSuspended)
        guard case .retrying = machine.remote else { Issue.record("remote \(machine.remote)"); return }
        #expect(Set(machine.waitingClasses) == [.crash, .info])
    }

    @Test("while a crash record waits on a paused remote, a crash operation alone probes about every second; its delivery ends the pause")
    func crashProbe() throws {
        var machine = Machine()
        let info = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(info, now: t0)
        _ = machine.claimed(info, moreLeft: false)
        let paused = machine.operationFinished(info, .delivered(.attempted(report(pause: pause(60, from: t0)))), now: t0)
        let endPause = try #require(paused.armTimers.first?.timer)
        #expect(paused.armTimers.count == 1, "no crash record waits: no probe")
        let waitingInfo = try #require(paused.enqueue.first?.id)

        // A crash record arrives during the outage: a probe is due within the interval.
        let arrived = machine.recordsAvailable([.crash], now: t0 + 5)
        let crash = try #require(arrived.enqueue.first?.id)
        let (probe, probeAt) = try #require(arrived.armTimers.first)
        #expect(probeAt >= t0 + 5 + Machine.crashProbeInterval / 2 && probeAt <= t0 + 5 + Machine.crashProbeInterval)

        // The probe lets the queue run until the crash operation starts; another class's is declined meanwhile.
        #expect(machine.timerFired(probe, now: probeAt).suspensions == [false])
        let declined = machine.operationStarted(waitingInfo, now: probeAt)
        #expect(!declined.proceed && declined.actions.enqueue.map(\.priorityClass) == [.info])
        let started = machine.operationStarted(crash, now: probeAt)
        #expect(started.proceed && started.actions.suspensions == [true], "suspended again behind the probe")
        #expect(machine.isQueueSuspended)

        // Still down: the crash batch is back, and the next probe is due within the interval. A failed probe does
        // not lengthen the rest's pause.
        _ = machine.claimed(crash, moreLeft: false)
        let failed = machine.operationFinished(crash, .delivered(.attempted(report(pause: pause(120, from: probeAt)))), now: probeAt)
        let nextCrash = try #require(failed.enqueue.first { $0.priorityClass == .crash }?.id)
        let (nextProbe, nextProbeAt) = try #require(failed.armTimers.first { if case .probeForCrash = $0.timer { true } else { false } })
        #expect(nextProbeAt <= probeAt + Machine.crashProbeInterval)
        #expect(machine.remote.pause?.until == t0 + 60 && failed.cancelTimers.isEmpty, "the pause keeps its end")

        // Back: the probe's delivery ends the shipper's pause.
        _ = machine.timerFired(nextProbe, now: nextProbeAt)
        _ = machine.operationStarted(nextCrash, now: nextProbeAt)
        _ = machine.claimed(nextCrash, moreLeft: false)
        let back = machine.operationFinished(nextCrash, .delivered(.attempted(report(delivered: 1))), now: nextProbeAt + 0.1)
        #expect(back.suspensions == [false] && !machine.isQueueSuspended)
        #expect(back.cancelTimers == [endPause], "the pause's timer is dropped")
        #expect(machine.remote == .accepting)
    }

    @Test("no probe against a remote that refuses the endpoint, nor before a Retry-After the remote asked for")
    func noProbeWhenRefusedOrAsked() throws {
        for refusing in [true, false] {
            var machine = Machine()
            let info = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
            _ = machine.operationStarted(info, now: t0)
            var stop = pause(60, from: t0, cause: refusing ? .endpointRefused : .remoteUnavailable)
            stop.isAskedByRemote = !refusing
            _ = machine.operationFinished(info, .delivered(.attempted(report(pause: stop))), now: t0)
            #expect(machine.recordsAvailable([.crash], now: t0 + 1).armTimers.isEmpty, refusing ? "refused" : "asked")
        }
    }

    @Test("an operator's pause holds crash records too: no probe")
    func noProbeWhilePausedByOperator() throws {
        var machine = Machine()
        let info = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(info, now: t0)
        _ = machine.operationFinished(info, .delivered(.attempted(report(pause: pause(60, from: t0)))), now: t0)
        _ = machine.setPausedByOperator(true, now: t0)
        #expect(machine.recordsAvailable([.crash], now: t0 + 1).armTimers.isEmpty)
        let resumed = machine.setPausedByOperator(false, now: t0 + 2)
        #expect(resumed.armTimers.count == 1, "armed again once the operator resumes, the remote still paused")
    }

    @Test("a longer pause extends the current one; a shorter one keeps its end but shows the newer reason")
    func overlappingPauses() throws {
        var machine = Machine()
        let ids = machine.recordsAvailable([.error, .info, .debug], now: t0).enqueue.map(\.id)
        for id in ids { _ = machine.operationStarted(id, now: t0) }
        let first = machine.operationFinished(ids[0], .delivered(.attempted(report(pause: pause(10, from: t0)))), now: t0)
        let firstTimer = try #require(first.armTimers.first?.timer)

        var shorter = pause(3, from: t0, cause: .endpointRefused)
        shorter.reason = "HTTP 401"
        let second = machine.operationFinished(ids[1], .delivered(.attempted(report(pause: shorter))), now: t0)
        #expect(second.armTimers.isEmpty && second.cancelTimers.isEmpty && second.suspensions.isEmpty)
        guard case .paused(let shown, _, _) = machine.remote else { Issue.record("remote \(machine.remote)"); return }
        #expect(shown.until == t0 + 10 && shown.reason == "HTTP 401" && shown.cause == .endpointRefused)

        let longer = machine.operationFinished(ids[2], .delivered(.attempted(report(pause: pause(30, from: t0)))), now: t0)
        #expect(longer.cancelTimers == [firstTimer] && longer.armTimers.map(\.date) == [t0 + 30])
        #expect(machine.timerFired(firstTimer, now: t0 + 10).isEmpty, "the superseded timer is ignored")
        #expect(machine.isQueueSuspended)
    }

    @Test("a success after a pause shows the remote accepting again")
    func recovery() throws {
        var machine = Machine()
        let id = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(id, now: t0)
        let paused = machine.operationFinished(id, .delivered(.attempted(report(pause: pause(1, from: t0)))), now: t0)
        _ = machine.timerFired(try #require(paused.armTimers.first?.timer), now: t0 + 1)
        let retry = try #require(machine.recordsAvailable([.info], now: t0).enqueue.first?.id ?? paused.enqueue.first?.id)
        _ = machine.operationStarted(retry, now: t0 + 1)
        _ = machine.operationFinished(retry, .delivered(.attempted(report(delivered: 5))), now: t0 + 1)
        #expect(machine.remote == .accepting)
        #expect(machine.totals.delivered == 5 && machine.totals.failedRequests == 1)
    }

    @Test("last error is the latest failed request by time, whichever batch settles last; one accepted after it makes it past")
    func lastError() throws {
        var machine = Machine()
        let ids = machine.recordsAvailable([.error, .info], now: t0).enqueue.map(\.id)
        #expect(ids.count == 2)
        for id in ids { _ = machine.operationStarted(id, now: t0) }
        var split = report(delivered: 9)
        split.lastError = LastError(reason: "HTTP 400: bad field", at: t0 + 2)
        split.lastAcceptedAt = t0 + 3
        var refused = report(pause: pause(1, from: t0 + 1))
        refused.lastError = LastError(reason: "cannot connect to 127.0.0.1:8514: connection refused", at: t0 + 1)
        _ = machine.operationFinished(ids[0], .delivered(.attempted(split)), now: t0 + 3)
        _ = machine.operationFinished(ids[1], .delivered(.attempted(refused)), now: t0 + 4)
        #expect(machine.lastError == LastError(reason: "HTTP 400: bad field", at: t0 + 2), "the older refusal settled later")
        #expect(machine.lastAcceptedAt == t0 + 3, "accepted after it: the 400 is past, and still shown")
    }

    @Test("a spool failure blocks the class until its retry time")
    func spoolFailure() throws {
        var machine = Machine()
        let id = try #require(machine.recordsAvailable([.error], now: t0).enqueue.first?.id)
        _ = machine.operationStarted(id, now: t0)
        let failed = machine.operationFinished(id, .failed(retryAt: t0 + 2), now: t0)
        #expect(failed.armTimers.map(\.date) == [t0 + 2])
        #expect(machine.recordsAvailable([.error], now: t0).enqueue.isEmpty)
        #expect(!machine.isQueueSuspended, "other classes go on")
        #expect(machine.recordsAvailable([.info], now: t0).enqueue.map(\.priorityClass) == [.info])
    }

    @Test("shutdown cancels what waits, drops timers, resumes the queue, creates nothing, and wakes when idle")
    func shutdown() throws {
        var machine = Machine()
        let ids = machine.recordsAvailable([.crash, .info], now: t0).enqueue.map(\.id)
        _ = machine.operationStarted(ids[0], now: t0)
        let paused = machine.operationFinished(ids[0], .delivered(.attempted(report(pause: pause(60, from: t0)))), now: t0)
        let crashAgain = try #require(paused.enqueue.first?.id)
        let blocked = try #require(machine.recordsAvailable([.warning], now: t0).enqueue.first?.id)
        let running = ids[1]
        _ = machine.timerFired(try #require(paused.armTimers.first?.timer), now: t0 + 60)
        _ = machine.operationStarted(running, now: t0 + 60)
        _ = machine.operationStarted(blocked, now: t0 + 60)
        let block = machine.operationFinished(blocked, .delivered(.waiting(until: t0 + 90)), now: t0 + 60)
        _ = machine.operationFinished(crashAgain, .cancelled, now: t0 + 60)
        let pausedAgain = machine.recordsAvailable([.error], now: t0).enqueue.map(\.id)

        let actions = machine.beginShutdown(now: .now)
        #expect(actions.cancel == pausedAgain, "the waiting operation is cancelled")
        #expect(actions.cancelTimers == block.armTimers.map(\.timer))
        #expect(!actions.wakeIdleWaiters, "one request is still running")
        #expect(!machine.isQueueSuspended)
        #expect(machine.recordsAvailable([.crash], now: t0).enqueue.isEmpty, "nothing new")
        #expect(!machine.operationStarted(pausedAgain[0], now: t0 + 61).proceed, "it finishes without claiming")
        #expect(machine.shutdownTimedOut().cancel == [running])
        #expect(machine.operationFinished(running, .cancelled, now: t0 + 62).wakeIdleWaiters)
        #expect(machine.beginShutdown(now: .now).isEmpty, "once")
    }

    // MARK: Random schedules

    @Test("random schedules keep the invariants: two in flight, at most one waiting per class and slot, no urgent work left without an operation, nothing started or continued while paused or ahead of a waiting more urgent class, everything delivered",
          arguments: 0..<40)
    func randomSchedules(seed: UInt64) throws {
        var simulation = Simulation(seed: seed, start: t0)
        for _ in 0..<400 {
            try simulation.step()
        }
        try simulation.drainToEmpty()
        #expect(simulation.delivered == simulation.arrived, "seed \(seed)")
        try simulation.shutDown()
    }

    @Test("the random schedules do reach the race (operations started as a pause began are declined), runs of batches and crash probes")
    func pauseRaceIsExercised() throws {
        var declined = 0
        var continued = 0
        var probes = 0
        for seed in UInt64(0)..<40 {
            var simulation = Simulation(seed: seed, start: t0)
            for _ in 0..<400 { try simulation.step() }
            declined += simulation.declinedDuringPause
            continued += simulation.continued
            probes += simulation.crashProbes
        }
        #expect(declined > 0)
        #expect(continued > 0)
        #expect(probes > 0)
    }
}

/// A queue with two slots, a spool of per-class records and a clock, driving the machine at random.
private struct Simulation {
    typealias Machine = ShipperStateMachine
    typealias OperationID = Machine.OperationID

    struct Operation {
        var id: OperationID
        var priorityClass: PriorityClass
        var isCancelled = false
        var batch = 0
    }

    var machine = Machine()
    var random: SplitMix64
    var now: Date
    /// Records per class, oldest first: when each is ready (nil: now).
    var spool: [PriorityClass: [Date?]] = [:]
    var waiting: [Operation] = []
    var running: [Operation] = []
    var timers: [Machine.TimerID: Date] = [:]
    var isSuspended = false
    var suspensionGeneration: UInt64 = 0
    var arrived = 0
    var delivered = 0
    /// Operations the machine declined because the queue started them during a pause.
    var declinedDuringPause = 0
    /// Batches an operation claimed after one of its own, in the same slot.
    var continued = 0
    /// Crash operations let through a pause.
    var crashProbes = 0
    let batchLimit = 4
    let slots = 2

    init(seed: UInt64, start: Date) {
        random = SplitMix64(seed: seed)
        now = start
    }

    mutating func step() throws {
        switch random.next() % 10 {
        case 0, 1: arrive()
        // Now and then the queue starts an operation although it is suspended: one it was starting as the pause
        // began, before the suspension reached it.
        case 2, 3, 4: try startNext(racingThePause: random.next() % 8 == 0)
        case 5, 6, 7: try finishOne(allowFailures: true)
        default: advance(by: Double(random.next() % 3000) / 1000)
        }
        try checkInvariants()
    }

    mutating func drainToEmpty() throws {
        var steps = 0
        while spool.values.contains(where: { !$0.isEmpty }) || !running.isEmpty {
            steps += 1
            guard steps < 100_000 else { throw SimulationError("records left behind: \(spool)") }
            if !running.isEmpty {
                try finishOne(allowFailures: false)
            } else if !isSuspended && !waiting.isEmpty {
                try startNext()
            } else {
                // Nothing can move until a timer fires.
                guard let next = timers.values.min() else { throw SimulationError("stuck with no timer: \(spool)") }
                advance(by: max(next.timeIntervalSince(now), 0))
            }
            try checkInvariants()
        }
    }

    mutating func shutDown() throws {
        arrive()
        try startNext()
        let actions = machine.beginShutdown(now: .now)
        apply(actions)
        #expect(!isSuspended, "waiting operations need a running queue to finish")
        #expect(waiting.allSatisfy { $0.isCancelled })
        #expect(timers.isEmpty)
        while !waiting.isEmpty { try startNext() }
        var woken = actions.wakeIdleWaiters
        while !running.isEmpty {
            let operation = running.removeFirst()
            woken = machine.operationFinished(operation.id, .cancelled, now: now).wakeIdleWaiters
        }
        #expect(woken, "the last request to finish wakes the drain")
        #expect(machine.recordsAvailable(Set(PriorityClass.allCases), now: now).isEmpty)
    }

    mutating func arrive() {
        let priorityClass = PriorityClass.allCases[Int(random.next() % 5)]
        let count = Int(random.next() % 5) + 1
        spool[priorityClass, default: []] += Array(repeating: nil, count: count)
        arrived += count
        apply(machine.recordsAvailable([priorityClass], now: now))
    }

    /// The queue starts its most urgent waiting operation, as `OperationQueue` does by `queuePriority`.
    mutating func startNext(racingThePause: Bool = false) throws {
        guard !isSuspended || racingThePause, running.count < slots,
            let index = waiting.indices.max(by: { waiting[$0].priorityClass < waiting[$1].priorityClass })
        else { return }
        let operation = waiting.remove(at: index)
        if operation.isCancelled {
            apply(machine.operationFinished(operation.id, .cancelled, now: now))
            return
        }
        let wasProbeOpen = isProbeOpen
        let (proceed, actions) = machine.operationStarted(operation.id, now: now)
        apply(actions)
        if let pausedUntil, pausedUntil > now {
            let isProbe = wasProbeOpen && operation.priorityClass == .crash
            #expect(!proceed || isProbe, "nothing but a crash probe starts while delivery is paused")
            if !proceed { declinedDuringPause += 1 }
            if proceed { crashProbes += 1 }
        }
        guard proceed else {
            apply(machine.operationFinished(operation.id, .delivered(.nothingToSend), now: now))
            return
        }
        try claim(for: operation)
    }

    /// A running operation claims its class's next batch and stays running, or finishes when there is none.
    mutating func claim(for operation: Operation) throws {
        var operation = operation
        try checkClassOrder(claiming: operation.priorityClass)
        var records = spool[operation.priorityClass, default: []]
        guard let first = records.first else {
            apply(machine.claimed(operation.id, moreLeft: false))
            apply(machine.operationFinished(operation.id, .delivered(.nothingToSend), now: now))
            return
        }
        if let readyAt = first, readyAt > now {
            apply(machine.claimed(operation.id, moreLeft: false))
            apply(machine.operationFinished(operation.id, .delivered(.waiting(until: readyAt)), now: now))
            return
        }
        var batch = 0
        while batch < batchLimit, let next = records.first, next.map({ $0 <= now }) ?? true {
            records.removeFirst()
            batch += 1
        }
        spool[operation.priorityClass] = records
        operation.batch = batch
        running.append(operation)
        apply(machine.claimed(operation.id, moreLeft: !records.isEmpty))
    }

    mutating func finishOne(allowFailures: Bool) throws {
        guard !running.isEmpty else { return }
        let operation = running.remove(at: Int(random.next() % UInt64(running.count)))
        let roll = allowFailures ? random.next() % 20 : 0
        var report = DeliveryReport()
        report.counts.requests = 1
        switch roll {
        case 0..<16:
            report.counts.delivered = operation.batch
            delivered += operation.batch
            // As a LogOperation does after every batch: go on in the same slot if the machine lets it.
            guard machine.operationDelivered(operation.id, report, now: now) else {
                apply(machine.operationFinished(operation.id, .delivered(.attempted(report)), now: now))
                return
            }
            continued += 1
            let urgent = waiting.filter { !$0.isCancelled && $0.priorityClass > operation.priorityClass }
            #expect(urgent.isEmpty, "\(operation.priorityClass) goes on while \(urgent.map(\.priorityClass)) waits")
            #expect(!isSuspended, "nothing goes on while delivery is paused")
            try claim(for: operation)
        case 16..<19:
            let until = now.addingTimeInterval(Double(random.next() % 5000 + 1) / 1000)
            report.counts.failedRequests = 1
            report.pause = DeliveryPause(until: until, cause: .remoteUnavailable, reason: "HTTP 503")
            // Put back as BatchDelivery does (DeliveryPause.readyAgain): crash records ready at once.
            let readyAt = operation.priorityClass == .crash ? nil : until
            spool[operation.priorityClass, default: []].insert(contentsOf: Array(repeating: readyAt, count: operation.batch), at: 0)
            apply(machine.operationFinished(operation.id, .delivered(.attempted(report)), now: now))
        default:
            // A settling write failed: the records are pending again, the class waits a moment.
            spool[operation.priorityClass, default: []].insert(contentsOf: Array(repeating: nil, count: operation.batch), at: 0)
            apply(machine.operationFinished(operation.id, .failed(retryAt: now.addingTimeInterval(1)), now: now))
        }
    }

    mutating func advance(by seconds: TimeInterval) {
        now = now.addingTimeInterval(seconds)
        while let (timer, _) = timers.filter({ $0.value <= now }).min(by: { $0.value < $1.value }) {
            timers[timer] = nil
            apply(machine.timerFired(timer, now: now))
        }
    }

    var pausedUntil: Date? {
        machine.remote.pause?.until
    }

    var isProbeOpen: Bool {
        if case .paused(_, _, .open) = machine.remote { true } else { false }
    }

    /// Carries out actions in their order, as the shipper does.
    mutating func apply(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .setQueueSuspended(let suspended, let generation):
                #expect(generation > suspensionGeneration, "a later decision carries a later generation")
                isSuspended = suspended
                suspensionGeneration = generation
            case .enqueue(let id, let priorityClass):
                waiting.append(Operation(id: id, priorityClass: priorityClass))
            case .cancelTimer(let timer):
                timers[timer] = nil
            case .armTimer(let timer, let date):
                timers[timer] = date
            case .cancel(let id):
                if let index = waiting.firstIndex(where: { $0.id == id }) { waiting[index].isCancelled = true }
            case .wakeIdleWaiters:
                break
            }
        }
    }

    /// Checked whenever an operation is about to claim: no more urgent class has ready records with no
    /// operation of its own waiting or running (unless the spool failed for it and it waits out a block), which is
    /// what lets the queue's priority order be class order.
    func checkClassOrder(claiming priorityClass: PriorityClass) throws {
        for urgent in PriorityClass.allCases where urgent > priorityClass {
            guard let front = spool[urgent]?.first, front.map({ $0 <= now }) ?? true else { continue }
            let covered = waiting.contains { $0.priorityClass == urgent && !$0.isCancelled }
                || running.contains { $0.priorityClass == urgent } || hasUnblockTimer(urgent)
            #expect(covered, "\(priorityClass) claims while \(urgent) has ready records and no operation")
        }
    }

    func hasUnblockTimer(_ priorityClass: PriorityClass) -> Bool {
        timers.keys.contains {
            if case .unblock(priorityClass, _) = $0 { return true }
            return false
        }
    }

    func checkInvariants() throws {
        #expect(running.count <= slots)
        #expect(machine.runningCount == running.count)
        for priorityClass in PriorityClass.allCases {
            #expect(waiting.count { $0.priorityClass == priorityClass && !$0.isCancelled } <= slots, "one waiting \(priorityClass) per slot at most")
            // Work is never forgotten: a class with records has a waiting operation or a timer that will make one.
            guard spool[priorityClass]?.isEmpty == false else { continue }
            let hasOperation = waiting.contains { $0.priorityClass == priorityClass }
            let hasTimer = hasUnblockTimer(priorityClass)
            let isRunning = running.contains { $0.priorityClass == priorityClass }
            #expect(hasOperation || hasTimer || isRunning, "\(priorityClass) has records and nothing to send them")
        }
        #expect(
            isSuspended == (pausedUntil != nil && !isProbeOpen),
            "the queue is suspended exactly while delivery is paused, except while a crash probe is let through")
        // A crash record never waits out a pause: while one waits, a probe is due within the interval, unless the
        // pause ends sooner or the crash class waits out a block of its own (the spool failed for it).
        if case .paused(let pause, _, .idle) = machine.remote, pause.until.timeIntervalSince(now) > Machine.crashProbeInterval,
            machine.classes[.crash]?.block == nil
        {
            #expect(!waiting.contains { $0.priorityClass == .crash && !$0.isCancelled }, "a crash operation waits with no probe due")
        }
    }
}

/// A small seeded generator, so a failing schedule can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct SimulationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ShipperStateMachine.Action {
    var isQueueSuspension: Bool {
        if case .setQueueSuspended = self { true } else { false }
    }
}

/// The actions of one kind, in their order: what the tests look for in an event's list.
extension Array where Element == ShipperStateMachine.Action {
    var enqueue: [(id: ShipperStateMachine.OperationID, priorityClass: PriorityClass)] {
        compactMap { if case .enqueue(let id, let priorityClass) = $0 { (id, priorityClass) } else { nil } }
    }

    var armTimers: [(timer: ShipperStateMachine.TimerID, date: Date)] {
        compactMap { if case .armTimer(let timer, let date) = $0 { (timer, date) } else { nil } }
    }

    var cancelTimers: [ShipperStateMachine.TimerID] {
        compactMap { if case .cancelTimer(let timer) = $0 { timer } else { nil } }
    }

    var cancel: [ShipperStateMachine.OperationID] {
        compactMap { if case .cancel(let id) = $0 { id } else { nil } }
    }

    var wakeIdleWaiters: Bool { contains(.wakeIdleWaiters) }

    var suspensions: [Bool] {
        compactMap { if case .setQueueSuspended(let suspended, _) = $0 { suspended } else { nil } }
    }
}
