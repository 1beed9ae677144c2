import Synchronization

/// Tells the shipper which classes gained records, as each commit lands.
///
/// The spool announces the classes of every commit on the thread that committed it (the spool's writer), and the
/// subscriber hears of them there: records go from the commit to the upload queue without a task in between
/// (see docs/ARCHITECTURE.md). A commit holds everything that queued up while the one before was written, so a
/// burst of small writes makes few announcements.
public final class Availability: Sendable {
    /// Hears the classes of one commit. It runs on the spool's writer, so it must be quick and must not block.
    public typealias Subscriber = @Sendable (Set<PriorityClass>) -> Void

    private let subscriber = Mutex<Subscriber?>(nil)

    public init() {}

    /// Sends the classes of every commit from now on to `subscriber`, in place of any earlier one.
    public func subscribe(_ subscriber: @escaping Subscriber) {
        self.subscriber.withLock { $0 = subscriber }
    }

    /// Records that `classes` have new committed records.
    func announce(_ classes: Set<PriorityClass>) {
        guard !classes.isEmpty, let subscriber = subscriber.withLock({ $0 }) else { return }
        subscriber(classes)
    }

    /// Ends the announcements, once the spool is closed.
    func finish() {
        subscriber.withLock { $0 = nil }
    }
}
