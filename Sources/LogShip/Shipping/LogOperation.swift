import Foundation
import Synchronization

/// Carries one batch of one priority class to the remote.
///
/// The batch is claimed when the queue starts the operation, not when it is created, so it holds whatever
/// records waited while the queue's slots were busy. The operation's `queuePriority` comes from its class, so a
/// waiting crash operation runs before waiting chatter.
final class LogOperation: ConcurrentOperation<DeliveryOutcome>, @unchecked Sendable {
    // @unchecked: Operation is not checked for Sendable; the stored closures are immutable, `task` is in a Mutex.

    let priorityClass: PriorityClass
    private let delivery: BatchDelivery
    /// Asks the shipper whether to proceed; false once it is shutting down, or while delivery is paused.
    private let admit: @Sendable () -> Bool
    /// Tells the shipper whether the claim left records of the class behind.
    private let claimed: @Sendable (_ moreLeft: Bool) -> Void
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(
        priorityClass: PriorityClass,
        delivery: BatchDelivery,
        admit: @escaping @Sendable () -> Bool,
        claimed: @escaping @Sendable (_ moreLeft: Bool) -> Void,
        completion: @escaping Completion
    ) {
        self.priorityClass = priorityClass
        self.delivery = delivery
        self.admit = admit
        self.claimed = claimed
        super.init(completion: completion)
        queuePriority = priorityClass.queuePriority
        name = "LogOperation(\(priorityClass))"
    }

    override func main() {
        guard admit() else {
            finish(.success(.nothingToSend))
            return
        }
        let work = Task(executorPreference: delivery.executor) { [delivery, priorityClass, claimed] in
            let result = await Result(catching: { try await delivery.deliverNext(priorityClass, claimed: claimed) })
            self.finish(result)
        }
        task.withLock { $0 = work }
        if isCancelled { work.cancel() }
    }

    override func cancelExecution() {
        task.withLock { $0 }?.cancel()
    }
}

extension Result where Failure == any Error {
    /// Captures the outcome of an async throwing closure.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
