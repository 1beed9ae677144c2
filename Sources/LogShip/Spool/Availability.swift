import Synchronization

/// Tells the shipper which classes gained records, merging announcements until it reads them.
///
/// A burst of single-record commits wakes the shipper once, not once per record: announcements only add to a
/// set of classes, and the shipper takes the whole set each time it wakes.
public final class Availability: Sendable {
    private let pending = Mutex(Set<PriorityClass>())
    private let wakeups: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        // One buffered wake-up is enough: whatever arrives meanwhile is in `pending`.
        (wakeups, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Records that `classes` have new committed records.
    func announce(_ classes: Set<PriorityClass>) {
        guard !classes.isEmpty else { return }
        let wake = pending.withLock { pending in
            let wasEmpty = pending.isEmpty
            pending.formUnion(classes)
            return wasEmpty
        }
        if wake { continuation.yield() }
    }

    /// Ends the updates, once the spool is closed.
    func finish() {
        continuation.finish()
    }

    /// The classes announced since the previous element, for one consumer.
    public var updates: AsyncCompactMapSequence<AsyncStream<Void>, Set<PriorityClass>> {
        wakeups.compactMap { [self] _ in
            let classes = pending.withLock { pending in
                defer { pending.removeAll() }
                return pending
            }
            return classes.isEmpty ? nil : classes
        }
    }
}
