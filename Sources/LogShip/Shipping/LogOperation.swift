import Foundation
import Synchronization

/// Carries batches of one priority class to the remote, one request at a time.
///
/// The first batch is claimed when the queue starts the operation, not when it is created, so it holds whatever
/// records waited while the queue's slots were busy. The operation's `queuePriority` comes from its class, so a
/// waiting crash operation runs before waiting chatter.
///
/// Once a batch is settled, the operation asks the shipper whether to go on to the next batch of its class in the
/// same slot; the shipper lets it only while nothing the queue would start first is waiting (see
/// ``ShipperStateMachine/operationDelivered(_:_:now:)``). A slot that changes hands costs two thread switches
/// (corelibs' queue starts every operation on a dispatch thread, the connections live on the upload loops), which
/// for a one-record request was more than the request itself.
///
/// An operation runs its whole run of batches on one upload lane, the least busy when it started
/// (``UploadLoops``), and hands it down to every request, so that the requests in flight are written and
/// answered on threads of their own.
final class LogOperation: ConcurrentOperation<DeliveryOutcome>, @unchecked Sendable {
    // @unchecked: Operation is not checked for Sendable; the stored closures are immutable, `task` is in a Mutex.

    let priorityClass: PriorityClass
    private let delivery: BatchDelivery
    /// Asks the shipper whether to proceed; false once it is shutting down, or while delivery is paused.
    private let admit: @Sendable () -> Bool
    /// Tells the shipper whether the claim left records of the class behind.
    private let claimed: @Sendable (_ moreLeft: Bool) -> Void
    /// Tells the shipper how a batch was settled; returns whether to go on to the next batch of the class.
    private let mayContinue: @Sendable (DeliveryReport) -> Bool
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(
        priorityClass: PriorityClass,
        delivery: BatchDelivery,
        admit: @escaping @Sendable () -> Bool,
        claimed: @escaping @Sendable (_ moreLeft: Bool) -> Void,
        mayContinue: @escaping @Sendable (DeliveryReport) -> Bool,
        completion: @escaping Completion
    ) {
        self.priorityClass = priorityClass
        self.delivery = delivery
        self.admit = admit
        self.claimed = claimed
        self.mayContinue = mayContinue
        super.init(completion: completion)
        queuePriority = priorityClass.queuePriority
        name = "LogOperation(\(priorityClass))"
    }

    override func main() {
        guard admit() else {
            finish(.success(.nothingToSend))
            return
        }
        let lane = delivery.loops?.take()
        let work = Task(executorPreference: lane?.executor) { [delivery, priorityClass, claimed, mayContinue] in
            let result = await Result(catching: {
                var outcome = try await delivery.deliverNext(priorityClass, on: lane, claimed: claimed)
                // The report of the batch the operation stops after is the result, which the shipper counts.
                while case .attempted(let report) = outcome, !Task.isCancelled, mayContinue(report) {
                    outcome = try await delivery.deliverNext(priorityClass, on: lane, claimed: claimed)
                }
                return outcome
            })
            if let lane { delivery.loops?.release(lane) }
            self.finish(result)
        }
        task.withLock { $0 = work }
        if isCancelled { work.cancel() }
    }

    override func cancelExecution() {
        task.withLock { $0 }?.cancel()
    }
}
