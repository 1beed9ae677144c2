import Synchronization

/// Gathers writes from many callers into group commits: while one transaction is being written, new items
/// queue up, and the next transaction takes all of them.
///
/// Callers that need durability wait for their commit; fire-and-forget callers wait only while the queue holds
/// items weighing `capacity`, which bounds both memory and what a `kill -9` can lose. The spool runs one for
/// appends (weighed in records) and one for acknowledgements.
final class CommitQueue<Item: Sendable, Receipt: Sendable>: Sendable {
    /// Commits items in one transaction; returns one receipt per item.
    typealias Commit = @Sendable ([Item]) async throws -> [Receipt]
    /// Told when a commit failed with the items no caller waits for, since no caller will hear of it otherwise.
    typealias FailureReport = @Sendable (any Error, _ unwaited: [Item]) -> Void

    private struct Pending {
        var item: Item
        var waiter: CheckedContinuation<Receipt, any Error>?
    }

    private struct State {
        var pending: [Pending] = []
        var pendingWeight = 0
        var isWriting = false
        var isClosed = false
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let capacity: Int
    /// How long a commit waits for more items after the first one arrives.
    private let linger: Duration
    private let weight: @Sendable (Item) -> Int
    /// Where the commits' task runs: the spool's writer (``SerialQueueTaskExecutor``), or the global pool.
    private let executor: (any TaskExecutor)?
    private let commit: Commit
    private let reportFailure: FailureReport
    private let state = Mutex(State())

    /// - Parameters:
    ///   - capacity: The weight of queued items above which ``enqueue(_:)`` waits.
    ///   - linger: How long a commit waits, once an item is queued while none is being written, for more to join
    ///     it: zero for items whose callers wait, a few milliseconds where many small commits would cost more
    ///     than the wait (acknowledgements).
    ///   - weight: What one item weighs against `capacity`.
    ///   - executor: Where the task that commits runs; the global pool when `nil`.
    init(
        capacity: Int, linger: Duration = .zero, weight: @escaping @Sendable (Item) -> Int,
        executor: (any TaskExecutor)? = nil, commit: @escaping Commit, reportFailure: @escaping FailureReport
    ) {
        self.capacity = capacity
        self.linger = linger
        self.weight = weight
        self.executor = executor
        self.commit = commit
        self.reportFailure = reportFailure
    }

    /// Queues `item` and waits until it is committed.
    func append(_ item: Item) async throws -> Receipt {
        try await waitForRoom()
        return try await withCheckedThrowingContinuation { continuation in
            submit(Pending(item: item, waiter: continuation))
        }
    }

    /// Queues `item` for the next commit; waits only while the queue is full.
    ///
    /// The queue takes an item only while it weighs less than `capacity`, checked as the item goes in: what
    /// fire-and-forget callers have queued is at most `capacity` plus one item, however many of them race.
    func enqueue(_ item: Item) async throws {
        while true {
            try await waitForRoom()
            if submit(Pending(item: item, waiter: nil), onlyIfRoom: true) { return }
        }
    }

    /// Refuses new items and waits until everything queued is committed.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                state.isClosed = true
                if state.isWriting || !state.pending.isEmpty {
                    state.idleWaiters.append(continuation)
                    return false
                }
                return true
            }
            if idle { continuation.resume() }
        }
        let roomWaiters = state.withLock { state in
            defer { state.roomWaiters = [] }
            return state.roomWaiters
        }
        for waiter in roomWaiters { waiter.resume() }
    }

    private func waitForRoom() async throws {
        while true {
            let hasRoom = try state.withLock { state in
                guard !state.isClosed else { throw SpoolError.closed }
                return state.pendingWeight < capacity
            }
            if hasRoom { return }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let roomNow = state.withLock { state in
                    if state.pendingWeight < capacity || state.isClosed { return true }
                    state.roomWaiters.append(continuation)
                    return false
                }
                if roomNow { continuation.resume() }
            }
        }
    }

    private enum SubmitAction { case startWriter, none, refuse, full }

    /// Queues `pending`; returns false, queuing nothing, when `onlyIfRoom` and the queue is full.
    @discardableResult
    private func submit(_ pending: Pending, onlyIfRoom: Bool = false) -> Bool {
        let action = state.withLock { state -> SubmitAction in
            guard !state.isClosed else { return .refuse }
            if onlyIfRoom && state.pendingWeight >= capacity { return .full }
            state.pending.append(pending)
            state.pendingWeight += weight(pending.item)
            if state.isWriting { return .none }
            state.isWriting = true
            return .startWriter
        }
        switch action {
        case .startWriter: Task(executorPreference: executor) { await self.writeLoop() }
        case .refuse: pending.waiter?.resume(throwing: SpoolError.closed)
        case .none: break
        case .full: return false
        }
        return true
    }

    /// Commits queued groups until the queue is empty.
    private func writeLoop() async {
        while true {
            if linger > .zero {
                // Not a synchronisation: the items that arrive meanwhile share the commit.
                try? await Task.sleep(for: linger)
            }
            let (batch, roomWaiters, idleWaiters) = state.withLock { state in
                let batch = state.pending
                state.pending = []
                state.pendingWeight = 0
                let roomWaiters = state.roomWaiters
                state.roomWaiters = []
                var idleWaiters: [CheckedContinuation<Void, Never>] = []
                if batch.isEmpty {
                    state.isWriting = false
                    idleWaiters = state.idleWaiters
                    state.idleWaiters = []
                }
                return (batch, roomWaiters, idleWaiters)
            }
            for waiter in roomWaiters { waiter.resume() }
            guard !batch.isEmpty else {
                for waiter in idleWaiters { waiter.resume() }
                return
            }
            do {
                let receipts = try await commit(batch.map(\.item))
                for (pending, receipt) in zip(batch, receipts) {
                    pending.waiter?.resume(returning: receipt)
                }
            } catch {
                for pending in batch {
                    pending.waiter?.resume(throwing: error)
                }
                let unwaited = batch.filter { $0.waiter == nil }.map(\.item)
                if !unwaited.isEmpty {
                    reportFailure(error, unwaited)
                }
            }
        }
    }
}
