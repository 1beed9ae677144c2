import Synchronization

/// What a ``LogOperation`` tells its owner (the shipper), naming itself by its id.
protocol LogOperationOwner: AnyObject, Sendable {
    /// The queue started the operation.
    func operationStarted(_ id: ShipperStateMachine.OperationID)
    /// The operation made its claim: what it took, or `nil` when it found nothing.
    func operation(_ id: ShipperStateMachine.OperationID, claimed claim: BatchDelivery.Claim?)
    /// The operation finished.
    func operation(_ id: ShipperStateMachine.OperationID, finished report: OperationReport)
}

/// One request: a batch of one priority class, claimed when the queue starts the operation (so it holds whatever
/// records waited while the queue's slots were busy), or a part of a refused batch, posted and settled.
///
/// Its `queuePriority` comes from its class, so a waiting crash operation runs before waiting chatter. It runs its
/// request on the least busy upload lane (``UploadLoops``), so that the two requests in flight are written and
/// answered on threads of their own. The queue starts it on one of its dispatch threads; the delivery task is
/// started from there straight onto the lane's event loop, one hop per request.
final class LogOperation: ConcurrentOperation<OperationReport>, @unchecked Sendable {
    // @unchecked: Operation is not checked for Sendable; the stored properties are immutable or Sendable, `task`
    // is in a Mutex.

    let id: ShipperStateMachine.OperationID
    let work: OperationWork
    /// The endpoint its request goes to (a place in `upload.url`).
    let endpoint: Int
    private let delivery: BatchDelivery
    /// Held weakly: a shipper gone (a test's) leaves its operations to finish without telling anyone.
    private weak let owner: (any LogOperationOwner)?
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(
        id: ShipperStateMachine.OperationID, work: OperationWork, endpoint: Int, delivery: BatchDelivery,
        owner: any LogOperationOwner
    ) {
        self.id = id
        self.work = work
        self.endpoint = endpoint
        self.delivery = delivery
        self.owner = owner
        super.init(resultHandler: { [weak owner] result in
            // Only a cancellation fails an operation: its work reports everything else.
            owner?.operation(id, finished: (try? result.get()) ?? .cancelled)
        })
        queuePriority = work.priorityClass.queuePriority
        name = "LogOperation(\(work.priorityClass))"
    }

    override func main() {
        owner?.operationStarted(id)
        let lane = delivery.loops?.take()
        let running = Task(executorPreference: lane?.executor) { [delivery, work, endpoint, id, owner] in
            let report = await delivery.perform(work, to: endpoint, on: lane) { owner?.operation(id, claimed: $0) }
            if let lane { delivery.loops?.giveBack(lane) }
            self.finish(.success(report))
        }
        task.withLock { $0 = running }
        if isCancelled { running.cancel() }
    }

    override func cancelExecution() {
        task.withLock { $0 }?.cancel()
    }
}
