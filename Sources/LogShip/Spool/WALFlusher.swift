import Dispatch
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Puts the spool's commits on the disk beside the writer instead of inside it.
///
/// SQLite commits with `synchronous = NORMAL`: a commit's WAL frames reach the page cache, which outlives a crash
/// or `kill -9` of logshipd but not a power loss. This flushes the WAL file (`fdatasync`) on a queue of its own,
/// so the writer goes on with the next transaction while the disk catches up, and one flush covers every commit
/// written before it started. Inside the commit (`synchronous = FULL`) each flush held the writer, and with it
/// every ingest socket, for as long as the disk took.
///
/// The writer reports each append it commits (``didWrite()``), which starts a flush unless one is running, and
/// callers that promise durability wait for a flush that covers what was written before they asked
/// (``waitUntilFlushed()``).
final class WALFlusher: Sendable {
    /// Flushes a file descriptor's data to the disk; `fdatasync`, or a stand-in in tests.
    typealias Flush = @Sendable (Int32) -> Int32

    private struct Waiter {
        /// The number of commits that must be on the disk.
        var written: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        /// Commits written so far.
        var written: UInt64 = 0
        /// Commits known to be on the disk.
        var flushed: UInt64 = 0
        /// The commits the running flush covers; `nil` when none runs.
        var flushing: UInt64?
        var waiters: [Waiter] = []
    }

    private let descriptor: Int32
    private let path: String
    private let flush: Flush
    private let logger: Logger
    private let queue = DispatchQueue(label: "logshipd.spool.flush")
    private let state = Mutex(State())

    /// Opens the WAL file at `path`, which must exist.
    ///
    /// - Throws: ``SpoolError/storage(_:)`` when it cannot be opened.
    init(walPath path: String, logger: Logger, flush: @escaping Flush = { fdatasync($0) }) throws {
        // fdatasync needs no write access: it flushes the file, whichever descriptor names it.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SpoolError.storage("cannot open \(path): \(SystemError.describe(errno))") }
        self.descriptor = descriptor
        self.path = path
        self.flush = flush
        self.logger = logger
    }

    /// Tells the flusher that a commit was written; starts a flush unless one is running.
    func didWrite() {
        state.withLock { $0.written += 1 }
        startIfNeeded()
    }

    /// Returns once every commit reported before the call is on the disk.
    ///
    /// - Throws: ``SpoolError/storage(_:)`` when the flush that was to cover them failed.
    func waitUntilFlushed() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let flushed = state.withLock { state in
                guard state.flushed < state.written else { return true }
                state.waiters.append(Waiter(written: state.written, continuation: continuation))
                return false
            }
            if flushed {
                continuation.resume()
            } else {
                startIfNeeded()
            }
        }
    }

    /// Waits for the running flush, then closes the file. Nothing may be written after this.
    func close() {
        queue.sync {}
        Glibc.close(descriptor)
    }

    private func startIfNeeded() {
        let start = state.withLock { state in
            guard state.flushing == nil, state.flushed < state.written else { return false }
            state.flushing = state.written
            return true
        }
        if start { queue.async { self.flushWhileWritten() } }
    }

    /// Flushes until a flush finds nothing written after the one before it started.
    private func flushWhileWritten() {
        while true {
            // Taken before the flush starts: the commits counted were written before it, so it covers them.
            guard let covered = state.withLock({ $0.flushing }) else { return }
            let failure = flush(descriptor) == 0 ? nil : SpoolError.storage("fdatasync \(path): \(SystemError.describe(errno))")
            let (settled, again) = state.withLock { state -> ([Waiter], Bool) in
                guard failure == nil else {
                    // Every waiter hears of it, also those who came during the flush; the next write or wait
                    // tries again, so a failing disk is not retried in a loop.
                    defer { state.waiters = [] }
                    state.flushing = nil
                    return (state.waiters, false)
                }
                state.flushed = max(state.flushed, covered)
                let settled = state.waiters.filter { $0.written <= covered }
                state.waiters.removeAll { $0.written <= covered }
                state.flushing = state.flushed < state.written ? state.written : nil
                return (settled, state.flushing != nil)
            }
            if let failure {
                logger.error(
                    "the spool's recent commits could not be flushed to the disk",
                    metadata: ["logship.error": "\(failure)", "logship.spool.waiting": "\(settled.count)"])
            }
            for waiter in settled {
                if let failure { waiter.continuation.resume(throwing: failure) } else { waiter.continuation.resume() }
            }
            guard again else { return }
        }
    }
}
