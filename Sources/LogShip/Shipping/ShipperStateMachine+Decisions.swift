import Foundation

/// The decisions the events share: counting, creating operations, blocking a class, pausing, probing for crash
/// records, suspending the queue.
extension ShipperStateMachine {
    /// Adds a settled batch to the totals and keeps the latest failed and accepted requests; records it took or
    /// dead-lettered show that the remote accepts again.
    mutating func count(_ report: DeliveryReport) {
        totals += report.counts
        // Latest by time, not by arrival: the other slot's batch may settle after this one with older requests.
        if let failure = report.lastError, failure.at >= lastError?.at ?? .distantPast {
            lastError = failure
        }
        if let accepted = report.lastAcceptedAt, accepted > lastAcceptedAt ?? .distantPast {
            lastAcceptedAt = accepted
        }
        if report.pause == nil, report.counts.delivered > 0 || report.counts.deadLettered > 0, remote.pause == nil {
            remote = .accepting
        }
    }

    /// Creates waiting operations for a class until it has one (one per slot while it is backlogged), unless the
    /// class is blocked or shutdown has begun.
    mutating func enqueueIfNeeded(_ priorityClass: PriorityClass, _ decisions: inout Decisions) {
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
    mutating func block(_ priorityClass: PriorityClass, until date: Date, _ decisions: inout Decisions) {
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
    mutating func begin(_ newPause: DeliveryPause, _ decisions: inout Decisions) {
        guard phase == .running else { return }
        var probe = CrashProbe.idle
        if case .paused(let current, let timer, let currentProbe) = remote {
            if current.until >= newPause.until {
                var kept = newPause
                kept.until = current.until
                remote = .paused(kept, endedBy: timer, crashProbe: currentProbe)
                return
            }
            decisions.cancelTimers.append(timer)
            probe = currentProbe
        }
        let timer = TimerID.endPause(generation: nextSerial())
        remote = .paused(newPause, endedBy: timer, crashProbe: probe)
        decisions.armTimers.append((timer, newPause.until))
        updateQueueSuspension(&decisions)
    }

    /// Suspends the queue while delivery is paused, by the remote or by the operator, unless shutdown has begun
    /// (waiting operations must be started to finish).
    mutating func updateQueueSuspension(_ decisions: inout Decisions) {
        let isProbing = if case .paused(_, _, .open) = remote { true } else { false }
        let isSuspended = phase == .running && ((remote.pause != nil && !isProbing) || isPausedByOperator)
        guard isQueueSuspended != isSuspended else { return }
        isQueueSuspended = isSuspended
        decisions.suspension = (isSuspended, nextSerial())
    }

    /// Arms the crash probe while the remote is paused and a crash operation waits, unless the pause ends first.
    mutating func armCrashProbeIfNeeded(now: Date, _ decisions: inout Decisions) {
        guard phase == .running, !isPausedByOperator, case .paused(let pause, let endTimer, .idle) = remote,
            pause.allowsCrashProbes, classes[.crash]?.block == nil,
            operations.values.contains(where: { $0.priorityClass == .crash && !$0.isRunning })
        else { return }
        let probeAt = now.addingTimeInterval(Self.crashProbeInterval * Double.random(in: 0.5...1))
        guard probeAt < pause.until else { return }
        let timer = TimerID.probeForCrash(generation: nextSerial())
        remote = .paused(pause, endedBy: endTimer, crashProbe: .armed(timer))
        decisions.armTimers.append((timer, probeAt))
    }

    /// Ends a class's wait for the link's budget, if it was waiting, and counts its seconds.
    mutating func endThrottledWait(_ priorityClass: PriorityClass, now: Date) {
        guard let since = classes[priorityClass]?.throttledSince else { return }
        throttledSeconds[priorityClass, default: 0] += max(0, now.timeIntervalSince(since))
        classes[priorityClass]?.throttledSince = nil
    }

    mutating func nextSerial() -> UInt64 {
        lastSerial += 1
        return lastSerial
    }
}
