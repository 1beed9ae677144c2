import NIOCore
import Synchronization

/// Recognises records received before by their ids (logshipd's `id`, `log.record.uid`, `LOGSHIP_RECORD_ID`), as a
/// receiver that stores each record once would: `logctl receive` drops them, or marks them with
/// `--keep-duplicates`.
///
/// Only accepted requests' ids are remembered: the records of a refused request come again, and are not repeats
/// then. The most recent ``capacity`` ids are kept, so that a long run holds bounded memory; a repeat of an older
/// one passes as new.
public final class RecordDeduplicator: Sendable {
    private struct Memory {
        var ids: Set<String> = []
        /// The ids in the order they were remembered, to forget the oldest.
        var order = CircularBuffer<String>()
        var duplicates = 0
    }

    /// How many ids are remembered.
    public let capacity: Int
    private let memory = Mutex(Memory())

    public init(capacity: Int = 1_000_000) {
        precondition(capacity > 0, "a deduplicator remembers some ids")
        self.capacity = capacity
    }

    /// Duplicates found since start.
    public var duplicates: Int { memory.withLock { $0.duplicates } }

    /// The indices of the records of `request`, if it was accepted, that repeat a record accepted before (or one
    /// earlier in the same request); remembers the others. A record without an id is never a repeat, nor is one
    /// of a refused request, which is shown as refused.
    public func repeats(in request: LogReceiver.Request) -> Set<Int> {
        guard (200..<300).contains(request.status) else { return [] }
        return memory.withLock { memory in
            var repeats: Set<Int> = []
            var seenHere: Set<String> = []
            for (index, id) in request.recordIDs.enumerated() {
                guard let id else { continue }
                if memory.ids.contains(id) || !seenHere.insert(id).inserted {
                    repeats.insert(index)
                } else {
                    memory.ids.insert(id)
                    memory.order.append(id)
                    if memory.order.count > capacity { memory.ids.remove(memory.order.removeFirst()) }
                }
            }
            memory.duplicates += repeats.count
            return repeats
        }
    }
}
