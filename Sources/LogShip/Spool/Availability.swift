import Synchronization

/// Tells the shipper what became of the spool's commits: which classes gained records, and which delivered
/// records could not be deleted (they are pending again).
///
/// The spool announces on the thread that committed (the spool's writer), and the subscriber hears of it there:
/// records go from the commit to the upload queue without a task in between (see docs/ARCHITECTURE.md). A commit
/// holds everything that queued up while the one before was written, so a burst of small writes makes few
/// announcements.
public final class Availability: Sendable {
    /// One announcement.
    public enum News: Hashable, Sendable {
        /// These classes have new committed records.
        case recordsAvailable(Set<PriorityClass>)
        /// Delivered records of these classes could not be deleted, for `reason`: they are pending again.
        case acknowledgementsFailed(Set<PriorityClass>, reason: String)
    }

    /// Hears one announcement. It runs on the spool's writer, so it must be quick and must not block.
    public typealias Subscriber = @Sendable (News) -> Void

    private let subscriber = Mutex<Subscriber?>(nil)

    public init() {}

    /// Sends every announcement from now on to `subscriber`, in place of any earlier one.
    public func subscribe(_ subscriber: @escaping Subscriber) {
        self.subscriber.withLock { $0 = subscriber }
    }

    /// Records that `classes` have new committed records.
    func announce(_ classes: Set<PriorityClass>) {
        guard !classes.isEmpty else { return }
        subscriber.withLock { $0 }?(.recordsAvailable(classes))
    }

    /// Records that delivered records of `classes` could not be deleted and are pending again.
    func announceFailedAcknowledgements(_ classes: Set<PriorityClass>, reason: String) {
        subscriber.withLock { $0 }?(.acknowledgementsFailed(classes, reason: reason))
    }

    /// Ends the announcements, once the spool is closed.
    func finish() {
        subscriber.withLock { $0 = nil }
    }
}
