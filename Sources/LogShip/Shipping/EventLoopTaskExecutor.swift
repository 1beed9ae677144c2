import NIOCore

/// Runs tasks on one NIO event loop: the upload client's, so that the delivery tasks and the connections they
/// post on share a thread.
///
/// A task that prefers this executor (`Task(executorPreference:)`) is resumed by the upload connections' answers
/// on the thread that read them, instead of being handed to the global pool: one delivery then costs a few thread
/// switches fewer, which is most of what a one-record request costs. Work run here must not block.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
