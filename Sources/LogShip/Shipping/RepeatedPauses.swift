import Logging
import Synchronization

/// The level to log a pause at: its first failure loudly, the same failure again (a crash probe refused about
/// every second, a retry that meets the same outage) at debug level until the remote accepts a request again.
///
/// Shared by every operation of one shipper; the state is the last failure logged loudly.
final class RepeatedPauses: Sendable {
    private let lastLogged = Mutex<String?>(nil)

    /// `level` for a failure unlike the last one logged since the remote last accepted a request; debug for the
    /// same one again.
    func level(for reason: String, _ level: Logger.Level) -> Logger.Level {
        lastLogged.withLock { last in
            defer { last = reason }
            return last == reason ? .debug : level
        }
    }

    /// The remote accepted a request: the next failure is news again.
    func remoteAccepted() {
        lastLogged.withLock { $0 = nil }
    }
}
