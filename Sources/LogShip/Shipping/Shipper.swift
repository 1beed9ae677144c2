import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The dam between the spool and the network: decides what goes next and hands `LogOperation`s to the queue.
///
/// The queue holds at most one waiting operation per class plus the ones in flight (at most
/// `maxConcurrentOperationCount`); the backlog stays in the spool. So when a slot frees, the queue picks the
/// most urgent waiting class, and that operation claims everything of its class that waited meanwhile, up to the
/// batch limits. While a class has a backlog (its last claim left records behind), each operation of it that
/// starts puts the class's next operation in the queue at once, before it even claims, so a freeing slot always
/// finds the class waiting and a backlog drains in class order through both slots. A lone record with a free slot
/// leaves at once. Nothing outside the shipper knows that operations or queues exist.
public final class Shipper: Service, Sendable {
    /// Counts since start.
    public struct Statistics: Hashable, Sendable {
        public var deliveredRecords = 0
        public var deadLetteredRecords = 0
        public var requests = 0
        public var failedRequests = 0
        public var operationsInFlight = 0
        /// Until when delivery is paused after a failure, if it is.
        public var pausedUntil: Date?
    }

    private struct TrackedOperation {
        var operation: LogOperation
        var isRunning: Bool
    }

    private struct State {
        var operations: [UInt64: TrackedOperation] = [:]
        var nextOperationID: UInt64 = 0
        /// Classes whose oldest record waits for a retry time, and the tasks that wake them.
        var blocked: [PriorityClass: (until: Date, wakeup: Task<Void, Never>)] = [:]
        /// A failure paused all delivery until then: one shared backoff, not one per request.
        var paused: (until: Date, resume: Task<Void, Never>)?
        var isClosed = false
        /// Classes whose last claim left ready records behind.
        var backlogged: Set<PriorityClass> = []
        var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID: UInt64 = 0
        var statistics = Statistics()

        var runningCount: Int { operations.values.count { $0.isRunning } }

        func hasWaitingOperation(for priorityClass: PriorityClass) -> Bool {
            operations.values.contains { $0.operation.priorityClass == priorityClass && !$0.isRunning }
        }
    }

    private let queue: OperationQueue
    private let delivery: BatchDelivery
    private let shutdownTimeout: Duration
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameters:
    ///   - delivery: What each operation does: claim, post, settle.
    ///   - maxInFlight: The most requests open at once (`upload.max_in_flight`).
    ///   - shutdownTimeout: How long requests in flight may take to finish after shutdown begins.
    ///   - queue: The queue to use; the shipper sets its concurrency. Injected for tests.
    public init(
        delivery: BatchDelivery,
        maxInFlight: Int,
        shutdownTimeout: Duration,
        logger: Logger,
        queue: OperationQueue = OperationQueue()
    ) {
        precondition(maxInFlight > 0)
        queue.maxConcurrentOperationCount = maxInFlight
        queue.name = "logshipd.upload"
        self.queue = queue
        self.delivery = delivery
        self.shutdownTimeout = shutdownTimeout
        self.logger = logger
    }

    /// Tells the shipper that records of these classes were accepted into the spool.
    public func recordsAvailable(_ classes: some Sequence<PriorityClass>) {
        let operations = state.withLock { state in
            Set(classes).compactMap { priorityClass in
                makeOperationIfNeeded(for: priorityClass, in: &state)
            }
        }
        // Most urgent first, so a burst across classes enters the queue in the order it should leave.
        for operation in operations.sorted(by: { $0.priorityClass > $1.priorityClass }) {
            queue.addOperation(operation)
        }
    }

    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.operationsInFlight = state.runningCount
            statistics.pausedUntil = state.paused?.until
            return statistics
        }
    }

    /// Resumes delivery of what the spool already holds, runs until graceful shutdown, then lets requests in flight
    /// finish within the shutdown timeout.
    ///
    /// - Important: Records that are not delivered by then stay in the spool; nothing new starts once shutdown
    ///   has begun.
    public func run() async throws {
        recordsAvailable(try await delivery.spool.pendingClasses())
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await classes in self.delivery.spool.availability.updates {
                    self.recordsAvailable(classes)
                }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        await drain()
    }

    // MARK: Operations

    /// Creates the waiting operation for a class unless one is waiting already or the class is blocked.
    private func makeOperationIfNeeded(for priorityClass: PriorityClass, in state: inout State) -> LogOperation? {
        guard !state.isClosed, state.blocked[priorityClass] == nil,
            !state.hasWaitingOperation(for: priorityClass)
        else { return nil }
        let id = state.nextOperationID
        state.nextOperationID += 1
        let operation = LogOperation(
            priorityClass: priorityClass,
            delivery: delivery,
            admit: { [weak self] in self?.admit(id) ?? false },
            claimed: { [weak self] moreReady in self?.claimed(priorityClass, moreReady: moreReady) },
            completion: { [weak self] result in self?.operationFinished(id, priorityClass, result) })
        state.operations[id] = TrackedOperation(operation: operation, isRunning: false)
        return operation
    }

    /// Called when the queue starts an operation: from here on it counts as in flight. If its class has a backlog,
    /// the class's next operation is queued now, so it is waiting whenever the other slot frees.
    private func admit(_ id: UInt64) -> Bool {
        let (admitted, standby) = state.withLock { state -> (Bool, LogOperation?) in
            guard !state.isClosed, let operation = state.operations[id] else { return (false, nil) }
            state.operations[id]?.isRunning = true
            let priorityClass = operation.operation.priorityClass
            guard state.backlogged.contains(priorityClass) else { return (true, nil) }
            return (true, makeOperationIfNeeded(for: priorityClass, in: &state))
        }
        if let standby { queue.addOperation(standby) }
        return admitted
    }

    /// Called after every claim: keeps a class's next operation waiting while it has a backlog.
    private func claimed(_ priorityClass: PriorityClass, moreReady: Bool) {
        let operation = state.withLock { state -> LogOperation? in
            guard moreReady else {
                state.backlogged.remove(priorityClass)
                return nil
            }
            state.backlogged.insert(priorityClass)
            return makeOperationIfNeeded(for: priorityClass, in: &state)
        }
        if let operation { queue.addOperation(operation) }
    }

    private func operationFinished(_ id: UInt64, _ priorityClass: PriorityClass, _ result: Result<DeliveryOutcome, any Error>) {
        let (followUp, idleWaiters) = state.withLock { state in
            state.operations[id] = nil
            var followUp: LogOperation?
            switch result {
            case .success(.attempted(let report)):
                state.statistics.deliveredRecords += report.delivered
                state.statistics.deadLetteredRecords += report.deadLettered
                state.statistics.requests += report.requests
                state.statistics.failedRequests += report.failedRequests
                if let retryAt = report.retryAt {
                    pause(until: retryAt, in: &state)
                }
                if report.retryAt != nil {
                    // The released batch needs an operation waiting for the queue to resume. (A backlog already
                    // has one: `claimed` and `admit` keep it.)
                    followUp = makeOperationIfNeeded(for: priorityClass, in: &state)
                }
            case .success(.waiting(let until)):
                block(priorityClass, until: until, in: &state)
            case .success(.nothingToSend):
                break
            case .failure(is CancellationError):
                break
            case .failure:
                block(priorityClass, until: Date().addingTimeInterval(delivery.backoff.nextDelay().seconds), in: &state)
            }
            var idleWaiters: [CheckedContinuation<Void, Never>] = []
            if state.isClosed && state.runningCount == 0 {
                idleWaiters = Array(state.idleWaiters.values)
                state.idleWaiters = [:]
            }
            return (followUp, idleWaiters)
        }
        if case .failure(let error) = result, !(error is CancellationError) {
            logger.error(
                "delivery failed before upload; class paused",
                metadata: ["logship.priority": "\(priorityClass)", "logship.error": "\(error)"])
        }
        if let followUp { queue.addOperation(followUp) }
        for waiter in idleWaiters { waiter.resume() }
    }

    /// Pauses a class until `date`; a task wakes it then.
    private func block(_ priorityClass: PriorityClass, until date: Date, in state: inout State) {
        guard !state.isClosed else { return }
        if let existing = state.blocked[priorityClass] {
            guard date < existing.until else { return }
            existing.wakeup.cancel()
        }
        state.blocked[priorityClass] = (date, at(date) { $0.unblock(priorityClass) })
    }

    /// Suspends the queue until `date`: operations in flight finish, none starts. When it resumes, the queue
    /// starts the most urgent waiting class first.
    ///
    /// `isSuspended` is set under the shipper's lock so that a pause and a resume cannot overtake each other;
    /// that is safe because the setter takes only the queue's own locks and starts operations asynchronously,
    /// never calling back into the shipper on this thread.
    private func pause(until date: Date, in state: inout State) {
        guard !state.isClosed else { return }
        if let existing = state.paused {
            guard date > existing.until else { return }
            existing.resume.cancel()
        }
        state.paused = (date, at(date) { $0.resume(pausedUntil: date) })
        queue.isSuspended = true
    }

    /// A task that calls `action` at `date`, unless it is cancelled first.
    private func at(_ date: Date, _ action: @escaping @Sendable (Shipper) -> Void) -> Task<Void, Never> {
        Task { [weak self] in
            do {
                try await Task.sleep(for: .seconds(max(date.timeIntervalSinceNow, 0)))
            } catch {
                return
            }
            if let self { action(self) }
        }
    }

    private func resume(pausedUntil date: Date) {
        state.withLock { state in
            guard state.paused?.until == date else { return }
            state.paused = nil
            queue.isSuspended = false
        }
    }

    private func unblock(_ priorityClass: PriorityClass) {
        let operation = state.withLock { state -> LogOperation? in
            state.blocked[priorityClass] = nil
            return makeOperationIfNeeded(for: priorityClass, in: &state)
        }
        if let operation { queue.addOperation(operation) }
    }

    // MARK: Shutdown

    private func drain() async {
        let (waiting, running) = state.withLock { state in
            state.isClosed = true
            for entry in state.blocked.values { entry.wakeup.cancel() }
            state.blocked = [:]
            // Waiting operations must be started to finish, so the queue cannot stay suspended.
            state.paused?.resume.cancel()
            state.paused = nil
            queue.isSuspended = false
            let waiting = state.operations.values.filter { !$0.isRunning }.map(\.operation)
            return (waiting, state.runningCount)
        }
        // Waiting operations finish as soon as the queue starts them; cancelling them frees their place.
        for operation in waiting { operation.cancel() }
        guard running > 0 else { return }

        logger.info("waiting for requests in flight", metadata: ["logship.requests": "\(running)"])
        if await waitUntilIdle(within: shutdownTimeout) { return }

        let stragglers = state.withLock { $0.operations.values.filter(\.isRunning).map(\.operation) }
        logger.warning(
            "requests still in flight at the shutdown timeout; cancelling them, their records stay spooled",
            metadata: ["logship.requests": "\(stragglers.count)"])
        for operation in stragglers { operation.cancel() }
        _ = await waitUntilIdle(within: .seconds(2))
    }

    /// Waits until no operation is running, at most `timeout`; returns whether that happened.
    private func waitUntilIdle(within timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.idle() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
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
                    guard state.runningCount > 0, !Task.isCancelled else { return true }
                    state.idleWaiters[waiterID] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.idleWaiters.removeValue(forKey: waiterID) }?.resume()
        }
        return state.withLock { $0.runningCount == 0 }
    }
}
