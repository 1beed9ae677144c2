import Dispatch

/// Runs tasks on a serial dispatch queue: the spool's writer queue, which SQLite's writes also target.
///
/// A group commit awaits GRDB's write and then takes the next group. With the committing task preferring this
/// executor, both the write and the task's next step are items of the same serial queue, run one after the other
/// by the thread that drains it; on the global pool, each commit would wait for a cooperative thread to come
/// back to it, and one commit after another is what bounds intake.
///
/// - Important: Work run here must not wait synchronously on the spool's writer (GRDB's synchronous `write`):
///   the writer's queue runs only when this queue's current item returns.
final class SerialQueueTaskExecutor: TaskExecutor {
    let queue: DispatchQueue

    init(_ queue: DispatchQueue) {
        self.queue = queue
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
