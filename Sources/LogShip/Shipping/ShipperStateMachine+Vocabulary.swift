import Foundation

extension ShipperStateMachine {
    /// Whether the shipper still starts work.
    enum Phase {
        case running
        /// Shutdown has begun: nothing new is created, running operations may finish.
        case draining
    }

    /// An operation the machine created and has not yet heard finish.
    struct TrackedOperation {
        var priorityClass: PriorityClass
        /// When it began its current batch: when the queue started it, or when it went on to a next batch; `nil`
        /// while it waits.
        var batchStartedAt: Date?
        var isRunning: Bool { batchStartedAt != nil }
    }

    /// What the machine knows of one class's records in the spool.
    struct ClassState {
        /// Its last claim left records behind.
        var isBacklogged = false
        /// Set while its oldest record waits for a retry time, or the class for the link's budget: until when,
        /// and the timer that ends the block.
        var block: (until: Date, timer: TimerID)?
        /// Since when it has been waiting for the link's budget, while it does.
        var throttledSince: Date?
    }

    /// Names one operation for as long as it exists.
    struct OperationID: Hashable, Comparable, Sendable, CustomStringConvertible {
        let rawValue: UInt64

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        var description: String { "operation \(rawValue)" }
    }

    /// Names one timer; a timer that fires after it was superseded is ignored.
    enum TimerID: Hashable, Sendable {
        /// Ends a pause of all delivery.
        case endPause(generation: UInt64)
        /// Ends the block of a class whose oldest record waits for a retry time.
        case unblock(PriorityClass, generation: UInt64)
        /// Lets a waiting crash operation probe the paused remote.
        case probeForCrash(generation: UInt64)
    }

    /// How an operation ended, as far as the machine is concerned.
    enum OperationEnd: Hashable, Sendable {
        case delivered(DeliveryOutcome)
        /// The spool failed before or while settling; the class waits until `retryAt`.
        case failed(retryAt: Date)
        case cancelled
    }

    /// What the remote was last seen doing.
    enum RemoteState: Hashable, Sendable {
        /// Nothing has failed since the last success (or since start).
        case accepting
        /// All delivery is paused until the pause ends, which the timer reports; crash records may probe
        /// meanwhile.
        case paused(DeliveryPause, endedBy: TimerID, crashProbe: CrashProbe)
        /// A pause ended and nothing has been accepted since: the next requests are probes.
        case retrying(after: DeliveryPause)

        var pause: DeliveryPause? {
            if case .paused(let pause, _, _) = self { pause } else { nil }
        }
    }

    /// Where a pause's probe for waiting crash records has got to.
    ///
    /// A crash report is what an operator waits for when a remote comes back, so crash records do not wait out
    /// the backoff the rest waits out: while one waits, a crash operation alone is let through at least every
    /// ``ShipperStateMachine/crashProbeInterval``. Delivered, it ends the shipper's pause, and what waited leaves
    /// most urgent class first. Only while the pause allows it (``DeliveryPause/allowsCrashProbes``: not for a
    /// refusing endpoint, nor a wait the remote asked for) and the crash class is not blocked.
    enum CrashProbe: Hashable, Sendable {
        /// No crash operation waits, or none has been waiting since the last probe.
        case idle
        /// A crash operation waits; the timer lets it through.
        case armed(TimerID)
        /// The queue runs until the crash operation starts; any other class's operation is declined.
        case open
        /// The crash operation is probing the remote; the queue is suspended again.
        case sending(OperationID)
    }

    /// One thing the shipper must do after an event. An event returns them in the order to carry them out: the
    /// queue's suspension first (so that an operation enqueued into a pause cannot start before it), then new
    /// operations, most urgent first, then timers cancelled before timers armed (a timer re-armed under the same
    /// name must survive), then operations cancelled, and waking the idle waiters last.
    enum Action: Equatable, Sendable {
        /// Suspend (`true`) or resume the queue. Two threads may carry out two of these at once; the one with the
        /// higher `generation` is the later decision and must be the one that stays.
        case setQueueSuspended(Bool, generation: UInt64)
        /// Create an operation for the class and add it to the queue.
        case enqueue(OperationID, PriorityClass)
        /// Forget a timer no longer needed (an optimisation: a superseded timer that fires anyway is ignored).
        case cancelTimer(TimerID)
        /// At `date`, report ``ShipperStateMachine/timerFired(_:now:)``.
        case armTimer(TimerID, at: Date)
        /// Cancel an operation.
        case cancel(OperationID)
        /// Wake those waiting for the shipper to go idle.
        case wakeIdleWaiters
    }

    /// The actions of one event as it decides them, handed out in the order to carry them out.
    struct Decisions {
        var suspension: (isSuspended: Bool, generation: UInt64)?
        var enqueue: [(OperationID, PriorityClass)] = []
        var cancelTimers: [TimerID] = []
        var armTimers: [(TimerID, Date)] = []
        var cancel: [OperationID] = []
        var wakeIdleWaiters = false

        var actions: [Action] {
            var actions: [Action] = suspension.map { [.setQueueSuspended($0.isSuspended, generation: $0.generation)] } ?? []
            actions += enqueue.map { .enqueue($0, $1) }
            actions += cancelTimers.map { .cancelTimer($0) }
            actions += armTimers.map { .armTimer($0, at: $1) }
            actions += cancel.map { .cancel($0) }
            if wakeIdleWaiters { actions.append(.wakeIdleWaiters) }
            return actions
        }
    }
}
