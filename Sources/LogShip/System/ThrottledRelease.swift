import Synchronization

/// Runs a costly release of memory at most once per interval. A request that comes within the interval is not
/// dropped but kept for the interval's end, so the last of a series of requests is always followed by a release.
final class ThrottledRelease: Sendable {
    /// What became of one request.
    enum Outcome: Equatable {
        /// The release runs now.
        case started
        /// The release runs at the end of the current interval.
        case deferred
        /// A release at the end of the current interval was already due; this request joins it.
        case joined
    }

    private struct State {
        var lastRelease: ContinuousClock.Instant?
        var isDeferred = false
    }

    private let interval: Duration
    private let release: @Sendable () -> Void
    private let state = Mutex(State())

    /// - Parameters:
    ///   - interval: The least time between two releases.
    ///   - release: The work; it runs in a background task.
    init(interval: Duration, release: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.release = release
    }

    /// Asks for a release: it runs now, or at the end of the interval of the last one.
    @discardableResult
    func request() -> Outcome {
        let now = ContinuousClock.now
        let due = state.withLock { state -> ContinuousClock.Instant? in
            guard !state.isDeferred else { return nil }
            guard let last = state.lastRelease, now - last < interval else {
                state.lastRelease = now
                return now
            }
            state.isDeferred = true
            return last + interval
        }
        guard let due else { return .joined }
        Task.detached(priority: .background) { [self] in
            if due > now {
                // Not a synchronisation: the release waits out the interval on purpose.
                try? await Task.sleep(until: due, clock: .continuous)
                state.withLock { state in
                    state.lastRelease = .now
                    state.isDeferred = false
                }
            }
            release()
        }
        return due > now ? .deferred : .started
    }
}
