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
/// so the writer goes on with the next transaction while the disk catches up. One flush runs at a time and covers
/// every commit written before it started; a commit written during a flush is covered by the next. Inside the
/// commit (`synchronous = FULL`) each flush held the writer, and with it every ingest socket, for as long as the
/// disk took.
///
/// The writer reports each append it commits (``didWrite()``), which starts a flush unless one is running, and
/// callers that promise durability wait for a flush that covers what was written before they asked
/// (``waitUntilFlushed()``).
///
/// A failed flush is final. Linux reports a write-back error once and marks the pages clean, so a later flush
/// that succeeds says nothing about them, and a power loss would also lose every commit after the hole they
/// leave in the WAL. From the first failure on, every wait fails, until logshipd is restarted on a sound disk.
final class WALFlusher: Sendable {
    /// Flushes a file descriptor's data to the disk.
    typealias Flush = @Sendable (Int32) -> Int32

    /// The flush of a running daemon.
    static let fdatasync: Flush = { Glibc.fdatasync($0) }

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
        /// The first failed flush; every wait fails from then on.
        var failure: SpoolError?
        var isClosed = false
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
    init(walPath path: String, logger: Logger, flush: @escaping Flush) throws {
        // fdatasync needs no write access: it flushes the file, whichever descriptor names it.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SpoolError.storage("cannot open \(path): \(SystemError.describe(errno))") }
        self.descriptor = descriptor
        self.path = path
        self.flush = flush
        self.logger = logger
    }

    deinit {
        if !state.withLock({ $0.isClosed }) { Glibc.close(descriptor) }
    }

    /// Tells the flusher that a commit was written; starts a flush unless one is running.
    func didWrite() {
        state.withLock { $0.written += 1 }
        startIfNeeded()
    }

    /// Returns once every commit reported before the call is on the disk.
    ///
    /// - Throws: ``SpoolError/notFlushed(_:)`` once a flush has failed; ``SpoolError/closed`` when the flusher
    ///   was closed before those commits were flushed.
    func waitUntilFlushed() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome = state.withLock { state -> Result<Bool, SpoolError> in
                if let failure = state.failure { return .failure(failure) }
                guard state.flushed < state.written else { return .success(true) }
                if state.isClosed { return .failure(.closed) }
                state.waiters.append(Waiter(written: state.written, continuation: continuation))
                return .success(false)
            }
            switch outcome {
            case .success(true): continuation.resume()
            case .success(false): startIfNeeded()
            case .failure(let error): continuation.resume(throwing: error)
            }
        }
    }

    /// Flushes what was written and not yet flushed, then closes the file. Waits that come later fail with
    /// ``SpoolError/closed`` unless what they wait for is on the disk. Nothing may be written after this.
    func close() {
        guard !state.withLock({ state in defer { state.isClosed = true }; return state.isClosed }) else { return }
        // The queue runs one block at a time: this one comes after the flush that was running, if any.
        queue.sync {
            let pending = state.withLock { state in
                guard state.failure == nil, state.flushing == nil, state.flushed < state.written else { return false }
                state.flushing = state.written
                return true
            }
            if pending { flushWhileWritten() }
            Glibc.close(descriptor)
        }
    }

    private func startIfNeeded() {
        let start = state.withLock { state in
            guard !state.isClosed, state.failure == nil, state.flushing == nil, state.flushed < state.written
            else { return false }
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
            let failure = flush(descriptor) == 0 ? nil : SpoolError.notFlushed("fdatasync \(path): \(SystemError.describe(errno))")
            let (settled, again) = state.withLock { state -> ([Waiter], Bool) in
                guard failure == nil else {
                    state.failure = failure
                    state.flushing = nil
                    defer { state.waiters = [] }
                    return (state.waiters, false)
                }
                state.flushed = max(state.flushed, covered)
                let settled = state.waiters.filter { $0.written <= covered }
                state.waiters.removeAll { $0.written <= covered }
                state.flushing = state.flushed < state.written ? state.written : nil
                return (settled, state.flushing != nil)
            }
            if let failure {
                logger.critical(
                    "the spool's commits could not be flushed to the disk; from now on logctl send and the journal input fail, and socket lines are kept only in the page cache; restart logshipd once the disk is sound",
                    metadata: ["logship.error": "\(failure)", "logship.spool.waiting": "\(settled.count)"])
            }
            for waiter in settled {
                if let failure { waiter.continuation.resume(throwing: failure) } else { waiter.continuation.resume() }
            }
            guard again else { return }
        }
    }
}
