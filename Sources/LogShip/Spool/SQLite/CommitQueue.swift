import Synchronization

/// Gathers writes from many callers into group commits: while one transaction is being written, new items
/// queue up, and the next transaction takes all of them.
///
/// Callers that need durability wait for their commit; fire-and-forget callers wait only while the queue holds
/// items weighing `capacity`, which bounds both memory and what a `kill -9` can lose. The spool runs one for
/// appends (weighed in records) and one for acknowledgements.
///
/// A commit may hand back fire-and-forget items it has no room for (``Outcome/waiting``): they stay queued, first
/// in every later commit, until a commit takes them. They are tried again when a new item comes, when the owner
/// says room may have been made (``roomMayHaveChanged()``), and every ``waitingRetryInterval``. While any wait,
/// a fire-and-forget caller's item is queued at once, but the caller is held until its item is stored: a sender
/// whose records find no room stops reading its own socket, and a crash record from another goes on in. Once
/// the callers stop (``stopHolding()``), none is held or kept out for room any more: what finds none waits in
/// the queue until it closes.
final class CommitQueue<Item: Sendable, Receipt: Sendable>: Sendable {
    /// What one commit did: a receipt per item, in order, and, by the index of the item, the items or parts of
    /// items that must wait for room; only items no caller waits a receipt for may wait.
    struct Outcome: Sendable {
        var receipts: [Receipt]
        var waiting: [Int: Item] = [:]
    }

    /// Commits items in one transaction.
    typealias Commit = @Sendable ([Item]) async throws -> Outcome
    /// Told when a commit failed with the items no caller waits for, since no caller will hear of it otherwise;
    /// and, with ``SpoolError/closed``, of the items still waiting for room when the queue closed.
    typealias FailureReport = @Sendable (any Error, _ unwaited: [Item]) -> Void

    /// How often items waiting for room are tried again without being told that room may have been made: room
    /// can come from outside (another program's files deleted).
    static var waitingRetryInterval: Duration { .seconds(1) }

    private struct Pending {
        var item: Item
        var waiter: CheckedContinuation<Receipt, any Error>?
        /// A fire-and-forget caller held until its item is stored, because items were waiting for room when it
        /// came.
        var held: CheckedContinuation<Void, any Error>? = nil
    }

    private struct State {
        var pending: [Pending] = []
        /// The weight of the pending items no caller is held for.
        var pendingWeight = 0
        /// Items handed back for want of room. Their weight is kept while a commit tries them again: it says
        /// that items wait. Of it, what no caller is held for counts against `capacity` too.
        var waiting: [Pending] = []
        var waitingWeight = 0
        var unheldWaitingWeight = 0
        /// Whether room may have been made since the waiting items were last tried.
        var roomChanged = false
        /// The writer, while it has nothing to commit but waiting items.
        var writerWaiting: CheckedContinuation<Void, Never>?
        var isWriting = false
        var isClosed = false
        /// Until ``stopHolding()``: callers are held while items wait for room, and kept out by waiting items.
        var holdsCallers = true
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []

        /// What counts against `capacity`: items queued or waiting that no caller waits or is held for; once
        /// callers are not held, only items queued, since waiting ones may never find room.
        var weight: Int { holdsCallers ? pendingWeight + unheldWaitingWeight : pendingWeight }

        /// Whether a fire-and-forget caller is held until its item is stored.
        var holdsNextCaller: Bool { holdsCallers && waitingWeight > 0 }
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

    /// A queue whose commits take every item they are given.
    convenience init(
        capacity: Int, linger: Duration = .zero, weight: @escaping @Sendable (Item) -> Int,
        executor: (any TaskExecutor)? = nil, commitAll: @escaping @Sendable ([Item]) async throws -> [Receipt],
        reportFailure: @escaping FailureReport
    ) {
        self.init(
            capacity: capacity, linger: linger, weight: weight, executor: executor,
            commit: { Outcome(receipts: try await commitAll($0)) }, reportFailure: reportFailure)
    }

    /// Queues `item` and waits until it is committed.
    func append(_ item: Item) async throws -> Receipt {
        try await waitForRoom()
        return try await withCheckedThrowingContinuation { continuation in
            submit(Pending(item: item, waiter: continuation))
        }
    }

    /// Queues `item` for the next commit; waits while the queue is full, or, while items wait for room, until
    /// `item` is stored.
    ///
    /// The queue takes an item only while it weighs less than `capacity`, checked as the item goes in: what
    /// fire-and-forget callers have queued without being held is at most `capacity` plus one item, however many
    /// of them race, and each held caller holds one more.
    ///
    /// - Throws: ``SpoolError/closed`` once the queue is closing, also to a held caller whose item still waited.
    func enqueue(_ item: Item) async throws {
        while true {
            try await waitForRoom()
            var submitted = false
            try await withCheckedThrowingContinuation { (held: CheckedContinuation<Void, any Error>) in
                switch submit(Pending(item: item, waiter: nil, held: held), onlyIfRoom: true) {
                case .queued:
                    submitted = true
                    held.resume()
                case .held, .refused:
                    submitted = true
                case .full:
                    held.resume()
                }
            }
            if submitted { return }
        }
    }

    /// Tells the queue that room may have been made for the items waiting for it (records were deleted, or
    /// became free to evict): they are tried again.
    func roomMayHaveChanged() {
        let writer = state.withLock { state in
            state.roomChanged = true
            defer { state.writerWaiting = nil }
            return state.writerWaiting
        }
        writer?.resume()
    }

    /// The weight of the items waiting for room now, with those a commit is trying again.
    var waitingWeight: Int { state.withLock { $0.waitingWeight } }

    /// Lets every held caller go, and holds or keeps out none for room from now on: the callers are stopping
    /// (a daemon's inputs, at a stop), and room may never come. Items that find none still wait, to be stored if
    /// room comes before ``close()``, and reported then if not.
    func stopHolding() {
        let (held, roomWaiters) = state.withLock { state in
            state.holdsCallers = false
            var held: [CheckedContinuation<Void, any Error>] = []
            for index in state.pending.indices {
                guard let caller = state.pending[index].held else { continue }
                held.append(caller)
                state.pending[index].held = nil
                state.pendingWeight += weight(state.pending[index].item)
            }
            // Those a commit is trying now are let go when it hands them back (keepWaiting).
            for index in state.waiting.indices {
                guard let caller = state.waiting[index].held else { continue }
                held.append(caller)
                state.waiting[index].held = nil
                state.unheldWaitingWeight += weight(state.waiting[index].item)
            }
            defer { state.roomWaiters = [] }
            return (held, state.roomWaiters)
        }
        for caller in held { caller.resume() }
        for waiter in roomWaiters { waiter.resume() }
    }

    /// Refuses new items and waits until everything queued is committed; items still waiting for room then
    /// are reported (``FailureReport``) and dropped.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (idle, writer) = state.withLock { state in
                state.isClosed = true
                defer { state.writerWaiting = nil }
                if state.isWriting || !state.pending.isEmpty {
                    state.idleWaiters.append(continuation)
                    return (false, state.writerWaiting)
                }
                return (true, state.writerWaiting)
            }
            writer?.resume()
            if idle { continuation.resume() }
        }
        let roomWaiters = state.withLock { state in
            defer { state.roomWaiters = [] }
            return state.roomWaiters
        }
        for waiter in roomWaiters { waiter.resume() }
    }

    /// Waits until the queue has room, or items wait for room (a caller is then held, not kept out).
    private func waitForRoom() async throws {
        while true {
            let hasRoom = try state.withLock { state in
                guard !state.isClosed else { throw SpoolError.closed }
                return state.weight < capacity || state.holdsNextCaller
            }
            if hasRoom { return }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let roomNow = state.withLock { state in
                    if state.weight < capacity || state.holdsNextCaller || state.isClosed { return true }
                    state.roomWaiters.append(continuation)
                    return false
                }
                if roomNow { continuation.resume() }
            }
        }
    }

    private enum SubmitAction { case startWriter, wakeWriter(CheckedContinuation<Void, Never>), none, refuse, full }

    /// What ``submit(_:onlyIfRoom:)`` did with an item.
    private enum Submission {
        /// Queued; a caller held for it is not (nothing waits for room).
        case queued
        /// Queued, and its held caller is resumed once it is stored.
        case held
        /// Not queued: `onlyIfRoom`, and the queue is full.
        case full
        /// Not queued: the queue is closed, as its callers have been told.
        case refused
    }

    /// Queues `pending`; queues nothing when `onlyIfRoom` and the queue is full, unless items wait for room. A
    /// caller held for it stays held only while items wait for room.
    @discardableResult
    private func submit(_ pending: Pending, onlyIfRoom: Bool = false) -> Submission {
        var pending = pending
        let action = state.withLock { state -> SubmitAction in
            guard !state.isClosed else { return .refuse }
            if !state.holdsNextCaller {
                if onlyIfRoom && state.weight >= capacity { return .full }
                pending.held = nil
                state.pendingWeight += weight(pending.item)
            }
            state.pending.append(pending)
            if let writer = state.writerWaiting {
                state.writerWaiting = nil
                return .wakeWriter(writer)
            }
            if state.isWriting { return .none }
            state.isWriting = true
            return .startWriter
        }
        switch action {
        case .startWriter: Task(executorPreference: executor) { await self.writeLoop() }
        case .wakeWriter(let writer): writer.resume()
        case .refuse:
            pending.waiter?.resume(throwing: SpoolError.closed)
            pending.held?.resume(throwing: SpoolError.closed)
            return .refused
        case .none: break
        case .full: return .full
        }
        return pending.held == nil ? .queued : .held
    }

    private enum Step {
        /// Commit these: the waiting items first, then the new ones.
        case commit([Pending], roomWaiters: [CheckedContinuation<Void, Never>])
        /// Nothing new, and no sign of room for the waiting items.
        case waitForRoom
        /// Nothing left, or only waiting items once the queue is closed: the writer ends.
        case finish(abandoned: [Pending], idleWaiters: [CheckedContinuation<Void, Never>])
    }

    /// Commits queued items until nothing is left but items waiting for room that cannot be had.
    private func writeLoop() async {
        while true {
            if linger > .zero {
                // Not a synchronisation: the items that arrive meanwhile share the commit.
                try? await Task.sleep(for: linger)
            }
            switch state.withLock({ nextStep(&$0) }) {
            case .finish(let abandoned, let idleWaiters):
                if !abandoned.isEmpty { reportFailure(SpoolError.closed, abandoned.map(\.item)) }
                for pending in abandoned { pending.held?.resume(throwing: SpoolError.closed) }
                for waiter in idleWaiters { waiter.resume() }
                return
            case .waitForRoom:
                await waitForRoomToChange()
            case .commit(let batch, let roomWaiters):
                for waiter in roomWaiters { waiter.resume() }
                await write(batch)
            }
        }
    }

    /// Decides, under the lock, what the writer does next.
    private func nextStep(_ state: inout State) -> Step {
        let retryWaiting = state.roomChanged && !state.waiting.isEmpty && !state.isClosed
        guard !state.pending.isEmpty || retryWaiting else {
            if state.waiting.isEmpty || state.isClosed {
                let abandoned = state.waiting
                state.waiting = []
                state.waitingWeight = 0
                state.unheldWaitingWeight = 0
                state.isWriting = false
                defer { state.idleWaiters = [] }
                return .finish(abandoned: abandoned, idleWaiters: state.idleWaiters)
            }
            return .waitForRoom
        }
        state.roomChanged = false
        let batch = state.waiting + state.pending
        state.waiting = []
        state.pending = []
        state.pendingWeight = 0
        // The waiting items keep their weight while they are tried: the callers they keep out stay out, and
        // callers that come meanwhile are held.
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        if state.weight < capacity || state.holdsNextCaller {
            roomWaiters = state.roomWaiters
            state.roomWaiters = []
        }
        return .commit(batch, roomWaiters: roomWaiters)
    }

    /// Commits `batch` and answers its callers; keeps what it hands back waiting, and lets go the held callers
    /// whose items are stored.
    private func write(_ batch: [Pending]) async {
        do {
            let outcome = try await commit(batch.map(\.item))
            for (pending, receipt) in zip(batch, outcome.receipts) {
                pending.waiter?.resume(returning: receipt)
            }
            var waiting: [Pending] = []
            for (index, pending) in batch.enumerated() {
                if let rest = outcome.waiting[index] {
                    waiting.append(Pending(item: rest, waiter: nil, held: pending.held))
                } else {
                    pending.held?.resume()
                }
            }
            // Waiting items the commit took in part go again at once: a commit may take only so much.
            let tried = batch.filter { $0.waiter == nil }.reduce(0) { $0 + weight($1.item) }
            keepWaiting(waiting, tryAgain: waiting.reduce(0) { $0 + weight($1.item) } < tried)
        } catch {
            for pending in batch {
                pending.waiter?.resume(throwing: error)
                pending.held?.resume()
            }
            keepWaiting([], tryAgain: false)
            let unwaited = batch.filter { $0.waiter == nil }.map(\.item)
            if !unwaited.isEmpty {
                reportFailure(error, unwaited)
            }
        }
    }

    /// Makes `items` the ones waiting for room, in place of those the last commit tried; `tryAgain` when the
    /// commit stored some of what it was given, so that the rest need not wait for a sign of room.
    private func keepWaiting(_ items: [Pending], tryAgain: Bool) {
        let (held, roomWaiters) = state.withLock { state in
            if tryAgain { state.roomChanged = true }
            var items = items
            var held: [CheckedContinuation<Void, any Error>] = []
            if !state.holdsCallers {
                for index in items.indices {
                    guard let caller = items[index].held else { continue }
                    held.append(caller)
                    items[index].held = nil
                }
            }
            state.waiting = items
            state.waitingWeight = items.reduce(0) { $0 + weight($1.item) }
            state.unheldWaitingWeight = items.reduce(0) { $0 + ($1.held == nil ? weight($1.item) : 0) }
            guard state.weight < capacity || state.holdsNextCaller else {
                return (held, [CheckedContinuation<Void, Never>]())
            }
            defer { state.roomWaiters = [] }
            return (held, state.roomWaiters)
        }
        for caller in held { caller.resume() }
        for waiter in roomWaiters { waiter.resume() }
    }

    /// Waits until a new item comes, room may have been made, the queue closes, or the retry interval passes.
    private func waitForRoomToChange() async {
        Task {
            try? await Task.sleep(for: Self.waitingRetryInterval)
            self.roomMayHaveChanged()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.roomChanged || state.isClosed || !state.pending.isEmpty { return true }
                state.writerWaiting = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
