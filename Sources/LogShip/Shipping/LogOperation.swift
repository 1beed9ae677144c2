import Foundation
import Synchronization

/// What a ``LogOperation`` tells its owner (the shipper) and asks it, naming itself by its id.
protocol LogOperationOwner: AnyObject, Sendable {
    /// The queue started the operation; returns whether it may claim (not once shutdown has begun, nor while
    /// delivery is paused).
    func operationStarted(_ id: ShipperStateMachine.OperationID) -> Bool
    /// The operation claimed a batch, and left records of its class behind or not.
    func operation(_ id: ShipperStateMachine.OperationID, claimedLeavingMore moreLeft: Bool)
    /// The operation settled a batch as `report` says; returns whether it goes on to the next batch of its class.
    func operation(_ id: ShipperStateMachine.OperationID, delivered report: DeliveryReport) -> Bool
    /// The operation finished: the report of the batch it stopped after, or why it ended without one.
    func operation(_ id: ShipperStateMachine.OperationID, finished result: Result<DeliveryOutcome, any Error>)
}

/// Carries batches of one priority class to the remote, one request at a time.
///
/// The first batch is claimed when the queue starts the operation, not when it is created, so it holds whatever
/// records waited while the queue's slots were busy. The operation's `queuePriority` comes from its class, so a
/// waiting crash operation runs before waiting chatter.
///
/// Once a batch is settled, the operation asks its owner whether to go on to the next batch of its class in the
/// same slot; the shipper lets it only while nothing the queue would start first is waiting (see
/// ``ShipperStateMachine/operationDelivered(_:_:now:)``). A slot that changes hands costs two thread switches
/// (corelibs' queue starts every operation on a dispatch thread, the connections live on the upload loops), which
/// for a one-record request was more than the request itself.
///
/// An operation runs its whole run of batches on one upload lane, the least busy when it started
/// (``UploadLoops``), and hands it down to every request, so that the requests in flight are written and
/// answered on threads of their own.
final class LogOperation: ConcurrentOperation<DeliveryOutcome>, @unchecked Sendable {
    // @unchecked: Operation is not checked for Sendable; the stored properties are immutable or Sendable, `task`
    // is in a Mutex.

    let id: ShipperStateMachine.OperationID
    let priorityClass: PriorityClass
    private let delivery: BatchDelivery
    /// Held weakly: a shipper gone (a test's) leaves its operations to finish without telling anyone.
    private weak let owner: (any LogOperationOwner)?
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(
        id: ShipperStateMachine.OperationID, priorityClass: PriorityClass, delivery: BatchDelivery,
        owner: any LogOperationOwner
    ) {
        self.id = id
        self.priorityClass = priorityClass
        self.delivery = delivery
        self.owner = owner
        super.init(resultHandler: { [weak owner] result in owner?.operation(id, finished: result) })
        queuePriority = priorityClass.queuePriority
        name = "LogOperation(\(priorityClass))"
    }

    override func main() {
        guard owner?.operationStarted(id) == true else {
            finish(.success(.nothingToSend))
            return
        }
        let lane = delivery.loops?.take()
        let work = Task(executorPreference: lane?.executor) { [delivery, priorityClass, id, owner] in
            let claimed: @Sendable (Bool) -> Void = { owner?.operation(id, claimedLeavingMore: $0) }
            let result = await Result(catching: {
                var outcome = try await delivery.deliverNext(priorityClass, on: lane, claimed: claimed)
                // The report of the batch the operation stops after is the result, which the shipper counts.
                while case .attempted(let report) = outcome, !Task.isCancelled,
                    owner?.operation(id, delivered: report) == true
                {
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
