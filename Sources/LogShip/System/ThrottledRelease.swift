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

    private let interval: Duration
    private let release: @Sendable () -> Void
    /// When the last release ran or, while one is deferred, when it is due: a time still ahead means deferred.
    private let lastRelease = Mutex<ContinuousClock.Instant?>(nil)

    /// - Parameters:
    ///   - interval: The least time between two releases, counted from when each was due.
    ///   - release: The work; it runs in a background task.
    init(interval: Duration, release: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.release = release
    }

    /// Asks for a release: it runs now, or at the end of the interval of the last one.
    @discardableResult
    func request() -> Outcome {
        let now = ContinuousClock.now
        let due = lastRelease.withLock { last -> ContinuousClock.Instant? in
            guard let previous = last, now - previous < interval else {
                last = now
                return now
            }
            guard previous <= now else { return nil }
            last = previous + interval
            return last
        }
        guard let due else { return .joined }
        Task.detached(priority: .background) { [release] in
            if due > now {
                // Not a synchronisation: the release waits out the interval on purpose.
                try? await Task.sleep(until: due, clock: .continuous)
            }
            release()
        }
        return due > now ? .deferred : .started
    }
}
