import Synchronization

/// Gathers appends from many callers into group commits: while one transaction is being written, new appends
/// queue up, and the next transaction takes all of them.
///
/// Callers that need durability wait for their commit; fire-and-forget callers wait only while the queue holds
/// `capacity` records, which bounds both memory and what a `kill -9` can lose.
final class CommitQueue: Sendable {
    /// Commits groups of entries in one transaction; returns one receipt per group.
    typealias Commit = @Sendable ([SpoolAppend]) async throws -> [AppendReceipt]
    /// Told when a commit of fire-and-forget entries failed, since no caller waits to hear it.
    typealias FailureReport = @Sendable (any Error) -> Void

    private struct Pending {
        var append: SpoolAppend
        var waiter: CheckedContinuation<AppendReceipt, any Error>?
    }

    private struct State {
        var pending: [Pending] = []
        var pendingRecords = 0
        var isWriting = false
        var isClosed = false
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let capacity: Int
    private let commit: Commit
    private let reportFailure: FailureReport
    private let state = Mutex(State())

    init(capacity: Int, commit: @escaping Commit, reportFailure: @escaping FailureReport) {
        self.capacity = capacity
        self.commit = commit
        self.reportFailure = reportFailure
    }

    /// Queues entries (with the input position they bring the spool to) and waits until they are committed.
    func append(_ append: SpoolAppend) async throws -> AppendReceipt {
        try await waitForRoom()
        return try await withCheckedThrowingContinuation { continuation in
            submit(Pending(append: append, waiter: continuation))
        }
    }

    /// Queues entries for the next commit; waits only while the queue is full.
    func enqueue(_ entries: [SpoolEntry]) async throws {
        try await waitForRoom()
        submit(Pending(append: SpoolAppend(entries: entries, position: nil), waiter: nil))
    }

    /// Refuses new entries and waits until everything queued is committed.
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
                return state.pendingRecords < capacity
            }
            if hasRoom { return }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let roomNow = state.withLock { state in
                    if state.pendingRecords < capacity || state.isClosed { return true }
                    state.roomWaiters.append(continuation)
                    return false
                }
                if roomNow { continuation.resume() }
            }
        }
    }

    private func submit(_ pending: Pending) {
        enum Action { case startWriter, none, refuse }
        let action = state.withLock { state -> Action in
            guard !state.isClosed else { return .refuse }
            state.pending.append(pending)
            state.pendingRecords += pending.append.entries.count
            if state.isWriting { return .none }
            state.isWriting = true
            return .startWriter
        }
        switch action {
        case .startWriter: Task { await writeLoop() }
        case .refuse: pending.waiter?.resume(throwing: SpoolError.closed)
        case .none: break
        }
    }

    /// Commits queued groups until the queue is empty.
    private func writeLoop() async {
        while true {
            let (batch, roomWaiters, idleWaiters) = state.withLock { state in
                let batch = state.pending
                state.pending = []
                state.pendingRecords = 0
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
                let receipts = try await commit(batch.map(\.append))
                for (pending, receipt) in zip(batch, receipts) {
                    pending.waiter?.resume(returning: receipt)
                }
            } catch {
                for pending in batch {
                    pending.waiter?.resume(throwing: error)
                }
                if batch.contains(where: { $0.waiter == nil }) {
                    reportFailure(error)
                }
            }
        }
    }
}
