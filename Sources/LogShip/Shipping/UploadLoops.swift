import NIOCore
import Synchronization

/// The event loops uploads run on, as task executors, with how many operations run on each.
///
/// An operation runs its requests on one loop, the one with the fewest operations when it starts, so that with two
/// requests in flight each is written and answered on a thread of its own, as by two workers. On one loop, the
/// two requests' system calls (most of what a one-record request costs) took turns.
///
/// - Important: Every ``take()`` is matched by exactly one ``release(_:)`` once the operation's last request has
///   settled, or the loop counts as busy for good and later operations crowd onto the others.
public final class UploadLoops: Sendable {
    /// One executor per loop, in the order of the loops.
    let executors: [EventLoopTaskExecutor]
    private let operationCounts: Mutex<[Int]>

    /// - Parameter loops: At least one loop; the upload connections of each live on it.
    init(_ loops: [any EventLoop]) {
        precondition(!loops.isEmpty, "uploads need a loop")
        executors = loops.map(EventLoopTaskExecutor.init)
        operationCounts = Mutex(Array(repeating: 0, count: loops.count))
    }

    /// The loops, in the order of ``executors``: where ``HTTPUploader`` keeps a client each.
    var eventLoops: [any EventLoop] { executors.map(\.eventLoop) }

    /// The executor of the loop with the fewest operations (the first of those tied), counted for the caller
    /// until ``release(_:)``.
    func take() -> EventLoopTaskExecutor {
        let index = operationCounts.withLock { counts in
            let index = counts.indices.min { counts[$0] < counts[$1] }!
            counts[index] += 1
            return index
        }
        return executors[index]
    }

    /// Gives back an executor from ``take()``.
    func release(_ executor: EventLoopTaskExecutor) {
        guard let index = executors.firstIndex(where: { $0 === executor }) else { return }
        operationCounts.withLock { $0[index] -= 1 }
    }

    /// The executor of the loop the caller runs on, if it is one of these.
    var current: EventLoopTaskExecutor? {
        executors.first { $0.eventLoop.inEventLoop }
    }
}
