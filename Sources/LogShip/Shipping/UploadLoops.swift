import NIOCore
import Synchronization

/// The event loops uploads run on, one lane each, with how many operations hold each lane.
///
/// An operation takes the lane with the fewest operations when it starts and keeps it for its whole run of
/// batches: its delivery task runs on the lane's loop, and its requests go out on that loop's connection
/// (``Payload/lane``), so that with two requests in flight each is written and answered on a thread of its own,
/// as by two workers. On one loop, the two requests' system calls (most of what a one-record request costs) took
/// turns.
///
/// - Important: Every ``take()`` is matched by exactly one ``giveBack(_:)`` once the operation's request has
///   settled, or the lane counts as busy for good and later operations crowd onto the others.
public final class UploadLoops: Sendable {
    /// One executor per loop, in the order of the loops: lane `i` runs on `executors[i]`.
    let executors: [EventLoopTaskExecutor]
    private let operationCounts: Mutex<[Int]>

    /// - Parameter loops: At least one loop; the upload connections of each live on it.
    init(_ loops: [any EventLoop]) {
        precondition(!loops.isEmpty, "uploads need a loop")
        executors = loops.map(EventLoopTaskExecutor.init)
        operationCounts = Mutex(Array(repeating: 0, count: loops.count))
    }

    /// The loops, in the order of the lanes: where ``HTTPUploader`` keeps a client each.
    var eventLoops: [any EventLoop] { executors.map(\.eventLoop) }

    /// The lane with the fewest operations (the first of those tied), counted for the caller until
    /// ``giveBack(_:)``.
    func take() -> UploadLane {
        let index = operationCounts.withLock { counts in
            let index = counts.indices.min { counts[$0] < counts[$1] }!
            counts[index] += 1
            return index
        }
        return UploadLane(index: index, executor: executors[index])
    }

    /// Gives back a lane from ``take()``.
    func giveBack(_ lane: UploadLane) {
        operationCounts.withLock { $0[lane.index] -= 1 }
    }
}

/// The lane an operation holds: which upload loop its tasks run on, and whose connection its requests use.
struct UploadLane: Sendable {
    /// The lane's place among ``UploadLoops/executors``, and among the uploader's clients.
    let index: Int
    let executor: EventLoopTaskExecutor
}
