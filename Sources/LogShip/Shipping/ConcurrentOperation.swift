import Foundation
import Synchronization

/// An `Operation` whose work ends asynchronously, with a ready → executing → finished state machine that is safe
/// on swift-corelibs-foundation.
///
/// Subclasses override ``main()`` to start their work and call ``finish(_:)`` exactly once when it ends; they may
/// override ``cancelExecution()`` to stop work in progress. The result handler receives the result once.
///
/// Two facts of the Linux `OperationQueue` shape this class:
/// - The queue frees a slot only on `didChangeValue(forKey: "isFinished")`, and only if `isFinished` already reads
///   true; `willChangeValue` does nothing. State therefore changes under the lock and the notification is sent
///   after the lock is released: notifying under it can deadlock against the queue's own lock.
/// - An operation that reads finished before the queue started it crashes the queue. So ``cancel()`` never
///   finishes a waiting operation, and a ``finish(_:)`` that comes before ``start()`` is kept until the queue
///   starts the operation.
///
/// - Important: Do not add dependencies to these operations: corelibs' scheduler unlinks its priority list wrongly
///   when it skips an operation that is not ready.
open class ConcurrentOperation<Value: Sendable>: Operation, @unchecked Sendable {
    // @unchecked: Operation is an open class without Sendable checking; all state of ours is in `machine`.

    /// Receives the operation's result, exactly once; `Operation.completionBlock` is left to the caller.
    public typealias ResultHandler = @Sendable (Result<Value, any Error>) -> Void

    private let machine: Mutex<OperationStateMachine<Value>>
    /// The machine's phase, stored under its lock with every transition. The queue reads `isExecuting` and
    /// `isFinished` several times per operation; reading them here takes no lock and, this class being generic,
    /// looks up no type metadata, which the lock's generic state would on every read.
    private let phase = Atomic(OperationPhase.waiting)

    /// - Parameter resultHandler: Called once with the result, before the queue learns that the operation finished,
    ///   so that work it enqueues is already waiting when the slot frees.
    public init(resultHandler: ResultHandler? = nil) {
        machine = Mutex(OperationStateMachine(resultHandler: resultHandler))
        super.init()
    }

    public final override var isAsynchronous: Bool { true }

    public final override var isExecuting: Bool { phase.load(ordering: .acquiring) == .executing }

    public final override var isFinished: Bool { phase.load(ordering: .acquiring) == .finished }

    public final override func start() {
        let cancelled = isCancelled
        switch transition({ $0.start(isCancelled: cancelled) }) {
        case .execute:
            didChangeValue(forKey: "isExecuting")
            main()
        case .finish(let result, let resultHandler):
            deliver(result, to: resultHandler)
        case .none:
            break
        }
    }

    /// Starts the operation's work. Called once, by ``start()``, when the queue runs the operation.
    open override func main() {}

    /// Cancels the operation: a waiting one finishes as soon as the queue starts it, a running one has
    /// ``cancelExecution()`` called.
    public final override func cancel() {
        super.cancel()
        if isExecuting {
            cancelExecution()
        }
    }

    /// Stops work in progress; the work must still end with ``finish(_:)``.
    open func cancelExecution() {}

    /// Ends the operation with `result`. Only the first call counts.
    public final func finish(_ result: Result<Value, any Error>) {
        if case .finish(let result, let resultHandler) = transition({ $0.finish(result) }) {
            deliver(result, to: resultHandler)
        }
    }

    /// Feeds the machine an event under its lock and publishes its phase before the lock is released.
    private func transition(
        _ event: (inout OperationStateMachine<Value>) -> OperationStateMachine<Value>.Action
    ) -> OperationStateMachine<Value>.Action {
        machine.withLock { machine in
            let action = event(&machine)
            phase.store(machine.phase, ordering: .releasing)
            return action
        }
    }

    private func deliver(_ result: Result<Value, any Error>, to resultHandler: ResultHandler?) {
        resultHandler?(result)
        didChangeValue(forKey: "isFinished")
    }
}

/// Where an operation is, as the queue sees it.
enum OperationPhase: UInt8, AtomicRepresentable {
    case waiting
    case executing
    case finished
}

/// The pure state machine behind ``ConcurrentOperation``: decides, its owner acts outside the lock.
struct OperationStateMachine<Value: Sendable> {
    typealias ResultHandler = ConcurrentOperation<Value>.ResultHandler

    private enum State {
        /// Not started by the queue; a result that arrived early waits here.
        case waiting(earlyResult: Result<Value, any Error>?)
        case executing
        case finished
    }

    enum Action {
        case none
        case execute
        case finish(Result<Value, any Error>, ResultHandler?)
    }

    private var state = State.waiting(earlyResult: nil)
    private var resultHandler: ResultHandler?

    init(resultHandler: ResultHandler?) {
        self.resultHandler = resultHandler
    }

    var phase: OperationPhase {
        switch state {
        case .waiting: .waiting
        case .executing: .executing
        case .finished: .finished
        }
    }

    mutating func start(isCancelled: Bool) -> Action {
        guard case .waiting(let earlyResult) = state else { return .none }
        if let earlyResult {
            return finishNow(earlyResult)
        }
        if isCancelled {
            return finishNow(.failure(CancellationError()))
        }
        state = .executing
        return .execute
    }

    mutating func finish(_ result: Result<Value, any Error>) -> Action {
        switch state {
        case .waiting(nil):
            state = .waiting(earlyResult: result)
            return .none
        case .waiting, .finished:
            return .none
        case .executing:
            return finishNow(result)
        }
    }

    private mutating func finishNow(_ result: Result<Value, any Error>) -> Action {
        state = .finished
        defer { resultHandler = nil }
        return .finish(result, resultHandler)
    }
}
