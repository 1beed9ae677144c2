import DequeModule
import Foundation
import Synchronization

/// A spool that keeps records in memory only, bounded by a byte budget.
///
/// When the budget is exceeded the lowest class is evicted first, oldest record first; a record never evicts one
/// of a higher class, and crash records are never evicted. A crash record that finds only crash records (and
/// claimed batches) in a full spool is refused, and the refusal is reported, never silent.
///
/// - Important: Everything here is lost when the process exits; use it where no local storage is wanted.
public final class MemorySpool: Spool {
    private struct Entry {
        var sequence: Int64
        var line: [UInt8]
        var notBefore: Date?
    }

    private struct State {
        var queues = [Deque<Entry>](repeating: [], count: PriorityClass.allCases.count)
        var claimed: [Int64: Batch] = [:]
        var nextSequence: Int64 = 1
        var nextBatchID: Int64 = 1
        var bytes = 0
        var evicted = 0
        var refused = 0
    }

    /// Bookkeeping per stored record, so a spool of tiny records still respects its budget.
    static let entryOverhead = 64

    private let maximumBytes: Int
    private let state = Mutex(State())

    /// - Parameter maximumBytes: The budget for stored lines plus per-record overhead.
    public init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    public func append(_ entries: [SpoolEntry]) async throws -> AppendReceipt {
        state.withLock { state in
            var receipt = AppendReceipt()
            for entry in entries {
                let size = entry.line.count + Self.entryOverhead
                guard makeRoom(for: size, priority: entry.priority, in: &state, receipt: &receipt) else {
                    if entry.priority == .crash {
                        receipt.refused += 1
                        state.refused += 1
                    } else {
                        // Everything left is of a higher class: the newcomer is the lowest and oldest-to-go.
                        receipt.evicted += 1
                        state.evicted += 1
                    }
                    continue
                }
                state.queues[entry.priority.rawValue].append(
                    Entry(sequence: state.nextSequence, line: entry.line, notBefore: nil))
                state.nextSequence += 1
                state.bytes += size
                receipt.accepted += 1
            }
            return receipt
        }
    }

    /// Evicts records of classes up to `priority` (never crash) until `size` more bytes fit.
    private func makeRoom(
        for size: Int, priority: PriorityClass, in state: inout State, receipt: inout AppendReceipt
    ) -> Bool {
        let highestEvictable = min(priority, .error)
        while state.bytes + size > maximumBytes {
            guard
                let victimClass = PriorityClass.allCases.first(where: {
                    $0 <= highestEvictable && !state.queues[$0.rawValue].isEmpty
                }),
                let victim = state.queues[victimClass.rawValue].popFirst()
            else { return false }
            state.bytes -= victim.line.count + Self.entryOverhead
            state.evicted += 1
            receipt.evicted += 1
        }
        return true
    }

    public func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        let now = Date()
        return state.withLock { state in
            guard let head = state.queues[priority.rawValue].first else { return .empty }
            if let notBefore = head.notBefore, notBefore > now {
                return .waiting(until: notBefore)
            }
            var records: [SpooledRecord] = []
            var bytes = 0
            while records.count < limits.maxRecords, let next = state.queues[priority.rawValue].first {
                if let notBefore = next.notBefore, notBefore > now { break }
                let size = next.line.count + 1
                if !records.isEmpty && bytes + size > limits.maxBytes { break }
                state.queues[priority.rawValue].removeFirst()
                records.append(SpooledRecord(sequence: next.sequence, line: next.line))
                bytes += size
            }
            let batch = Batch(id: state.nextBatchID, priority: priority, records: records)
            state.nextBatchID += 1
            state.claimed[batch.id] = batch
            let moreReady = state.queues[priority.rawValue].first.map { $0.notBefore.map { $0 <= now } ?? true } ?? false
            return .batch(batch, moreReady: moreReady)
        }
    }

    public func acknowledge(_ batch: Batch) async throws {
        try state.withLock { state in
            guard let claimed = state.claimed.removeValue(forKey: batch.id) else { throw SpoolError.unknownBatch(batch.id) }
            state.bytes -= claimed.records.reduce(0) { $0 + $1.line.count + Self.entryOverhead }
        }
    }

    public func release(_ batch: Batch, retryAt: Date) async throws {
        try state.withLock { state in
            guard let claimed = state.claimed.removeValue(forKey: batch.id) else { throw SpoolError.unknownBatch(batch.id) }
            guard let firstSequence = claimed.records.first?.sequence else { return }
            // Put the batch back where it came from: before every record that arrived after it.
            let queue = state.queues[batch.priority.rawValue]
            var low = queue.startIndex
            var high = queue.endIndex
            while low < high {
                let middle = (low + high) / 2
                if queue[middle].sequence < firstSequence { low = middle + 1 } else { high = middle }
            }
            let entries = claimed.records.map { Entry(sequence: $0.sequence, line: $0.line, notBefore: retryAt) }
            state.queues[batch.priority.rawValue].insert(contentsOf: entries, at: low)
        }
    }

    public func pendingClasses() async throws -> Set<PriorityClass> {
        state.withLock { state in
            Set(PriorityClass.allCases.filter { !state.queues[$0.rawValue].isEmpty })
        }
    }

    public func statistics() async -> SpoolStatistics {
        state.withLock { state in
            var statistics = SpoolStatistics()
            for priority in PriorityClass.allCases {
                statistics.pending[priority] = state.queues[priority.rawValue].count
            }
            statistics.claimed = state.claimed.values.reduce(0) { $0 + $1.records.count }
            statistics.bytes = state.bytes
            statistics.evicted = state.evicted
            statistics.refused = state.refused
            return statistics
        }
    }
}
