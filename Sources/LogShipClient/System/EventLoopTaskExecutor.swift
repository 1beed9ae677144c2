import NIOCore

/// Runs tasks on one NIO event loop, so that a task and the channel it reads from or writes to share a thread.
///
/// A task that prefers this executor (`Task(executorPreference:)`) is resumed by its channel's reads or answers
/// on the thread that read them, instead of being handed to the global pool. The delivery tasks run on their
/// upload connections' loops (one delivery then costs a few thread switches fewer, which is most of what a
/// one-record request costs), and each ingest connection's task on its channel's loop. Work run here must not
/// block, except on a loop of its own (the datagram socket's reader).
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
