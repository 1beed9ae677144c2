import DequeModule
import Foundation
import Logging
import Synchronization

/// A spool that keeps records in memory only, bounded by a byte budget (`spool.path: memory`).
///
/// Eviction follows ``EvictionPolicy``. Appends take effect at once, so ``enqueue(_:)`` and ``append(_:)`` are
/// the same here.
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
        var claimed: [Int64: (priority: PriorityClass, line: [UInt8])] = [:]
        var deadLetters: [Int64: (record: SpooledRecord, priority: PriorityClass, letter: DeadLetter)] = [:]
        var nextSequence: Int64 = 1
        var nextDeadLetterID: Int64 = 1
        var claims = 0
        /// Input positions, for this process's life only.
        var positions: [String: String] = [:]
        var bytes = 0
        var evicted = 0
        var refused = 0
        var isClosed = false
    }

    private let maximumBytes: Int
    private let logger: Logger
    private let state = Mutex(State())
    public let availability = Availability()

    /// - Parameter maximumBytes: The budget for stored lines plus per-record overhead.
    public init(maximumBytes: Int, logger: Logger) {
        self.maximumBytes = maximumBytes
        self.logger = logger
    }

    public func append(_ entries: [SpoolEntry], position: InputPosition?, evicting: Bool) async throws -> AppendReceipt {
        let receipt = try state.withLock { state in
            guard !state.isClosed else { throw SpoolError.closed }
            var receipt = AppendReceipt()
            if !evicting && state.bytes + entries.reduce(0, { $0 + $1.accountedBytes }) > maximumBytes {
                receipt.deferred = entries.count
                return receipt
            }
            if let position {
                state.positions[position.input] = position.cursor
            }
            for entry in entries {
                guard makeRoom(for: entry, in: &state, receipt: &receipt) else {
                    if entry.priority == .crash {
                        receipt.refused += 1
                        state.refused += 1
                    } else {
                        // Everything left is of a higher class: the newcomer is the one to go.
                        receipt.evicted += 1
                        state.evicted += 1
                    }
                    continue
                }
                state.queues[entry.priority.rawValue].append(
                    Entry(sequence: state.nextSequence, line: entry.line, notBefore: nil))
                state.nextSequence += 1
                state.bytes += entry.accountedBytes
                receipt.accepted += 1
            }
            return receipt
        }
        if receipt.accepted > 0 {
            availability.announce(Set(entries.map(\.priority)))
        }
        logger.reportRefused(receipt.refused)
        return receipt
    }

    public func enqueue(_ entries: [SpoolEntry]) async throws {
        _ = try await append(entries)
    }

    public func savedPosition(of input: String) async throws -> String? {
        try state.withLock { state in
            guard !state.isClosed else { throw SpoolError.closed }
            return state.positions[input]
        }
    }

    /// Evicts records that ``EvictionPolicy`` allows until `entry` fits; evicts nothing when even that would
    /// not make it fit.
    private func makeRoom(for entry: SpoolEntry, in state: inout State, receipt: inout AppendReceipt) -> Bool {
        let needed = state.bytes + entry.accountedBytes - maximumBytes
        guard needed > 0 else { return true }
        // Count first: records are only removed once they are known to make room.
        var victims: [(priority: PriorityClass, count: Int)] = []
        var freeable = 0
        for victimClass in EvictionPolicy.victims(for: entry.priority) where freeable < needed {
            var count = 0
            for victim in state.queues[victimClass.rawValue] where freeable < needed {
                freeable += victim.line.count + SpoolEntry.overhead
                count += 1
            }
            victims.append((victimClass, count))
        }
        guard freeable >= needed else { return false }
        for (victimClass, count) in victims {
            state.queues[victimClass.rawValue].removeFirst(count)
            state.evicted += count
            receipt.evicted += count
        }
        state.bytes -= freeable
        return true
    }

    public func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        let now = Date()
        return try state.withLock { state in
            guard !state.isClosed else { throw SpoolError.closed }
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
                records.append(SpooledRecord(sequence: next.sequence, line: next.line[...]))
                state.claimed[next.sequence] = (priority, next.line)
                bytes += size
            }
            let moreLeft = !state.queues[priority.rawValue].isEmpty
            state.claims += 1
            return .batch(Batch(priority: priority, records: records, number: state.claims), moreLeft: moreLeft)
        }
    }

    public func acknowledge(_ batch: Batch) async throws {
        state.withLock { state in
            for sequence in batch.sequences {
                if let claimed = state.claimed.removeValue(forKey: sequence) {
                    state.bytes -= claimed.line.count + SpoolEntry.overhead
                }
            }
        }
    }

    /// The same as ``acknowledge(_:)``: nothing here is written anywhere.
    public func acknowledgeInBackground(_ batch: Batch) async throws {
        try await acknowledge(batch)
    }

    public func release(_ batch: Batch, retryAt: Date) async throws {
        unclaim(batch, notBefore: retryAt)
    }

    public func oldestTimestamps() async throws -> [PriorityClass: Timestamp] {
        state.withLock { state in
            var oldest: [PriorityClass: (sequence: Int64, line: [UInt8])] = [:]
            for priority in PriorityClass.allCases {
                if let first = state.queues[priority.rawValue].first { oldest[priority] = (first.sequence, first.line) }
            }
            for (sequence, claimed) in state.claimed where sequence < oldest[claimed.priority]?.sequence ?? .max {
                oldest[claimed.priority] = (sequence, claimed.line)
            }
            return oldest.compactMapValues { SpoolEntry.timestamp(ofLine: $0.line) }
        }
    }

    /// One sequence serves every class here: the mark holds the newest for each.
    public func arrivalMark() async throws -> ArrivalMark {
        let newest = state.withLock { $0.nextSequence - 1 }
        return ArrivalMark(sequences: Dictionary(uniqueKeysWithValues: PriorityClass.allCases.map { ($0, newest) }))
    }

    public func heldRecords(upTo mark: ArrivalMark, in classes: Set<PriorityClass>) async throws -> Int {
        state.withLock { state in
            let pending = classes.reduce(0) { count, priority in
                let last = mark.sequences[priority] ?? 0
                return count + state.queues[priority.rawValue].count { $0.sequence <= last }
            }
            return pending + state.claimed.count { sequence, claimed in
                classes.contains(claimed.priority) && sequence <= mark.sequences[claimed.priority] ?? 0
            }
        }
    }

    public func returnToPending(_ batch: Batch) async {
        unclaim(batch, notBefore: nil)
    }

    /// Puts the still claimed records of `batch` back at their place in their class.
    private func unclaim(_ batch: Batch, notBefore: Date?) {
        state.withLock { state in
            let entries = batch.records.filter { state.claimed.removeValue(forKey: $0.sequence) != nil }
                .map { Entry(sequence: $0.sequence, line: Array($0.line), notBefore: notBefore) }
            Self.insertInOrder(entries, into: &state.queues[batch.priority.rawValue])
        }
    }

    public func deadLetter(_ batch: Batch, failure: DeliveryFailure) async throws {
        let failedAt = Timestamp.now().rfc3339
        state.withLock { state in
            for record in batch.records where state.claimed.removeValue(forKey: record.sequence) != nil {
                let id = state.nextDeadLetterID
                state.nextDeadLetterID += 1
                state.bytes -= record.line.count + SpoolEntry.overhead
                let letter = DeadLetter(
                    id: id, priority: batch.priority.description, line: String(decoding: record.line, as: UTF8.self),
                    status: failure.status, reason: failure.reason, failedAt: failedAt)
                state.deadLetters[id] = (record, batch.priority, letter)
            }
        }
    }

    public func pendingClasses() async throws -> Set<PriorityClass> {
        state.withLock { state in
            Set(PriorityClass.allCases.filter { !state.queues[$0.rawValue].isEmpty })
        }
    }

    public func deadLetters(limit: Int) async throws -> [DeadLetter] {
        state.withLock { state in
            Array(state.deadLetters.values.map(\.letter).sorted { $0.id < $1.id }.prefix(limit))
        }
    }

    public func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let (count, classes) = state.withLock { state -> (Int, Set<PriorityClass>) in
            var count = 0
            var classes: Set<PriorityClass> = []
            for id in Self.selectedIDs(selection, in: state) {
                guard let (record, priority, _) = state.deadLetters.removeValue(forKey: id) else { continue }
                state.bytes += record.line.count + SpoolEntry.overhead
                Self.insertInOrder(
                    [Entry(sequence: record.sequence, line: Array(record.line), notBefore: nil)],
                    into: &state.queues[priority.rawValue])
                count += 1
                classes.insert(priority)
            }
            return (count, classes)
        }
        if !classes.isEmpty { availability.announce(classes) }
        return count
    }

    public func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        state.withLock { state in
            Self.selectedIDs(selection, in: state).reduce(0) { count, id in
                count + (state.deadLetters.removeValue(forKey: id) == nil ? 0 : 1)
            }
        }
    }

    public func statistics() async -> SpoolStatistics {
        state.withLock { state in
            var statistics = SpoolStatistics()
            for priority in PriorityClass.allCases {
                statistics.pending[priority] = state.queues[priority.rawValue].count
            }
            statistics.claimed = state.claimed.count
            statistics.bytes = state.bytes
            statistics.deadLetters = state.deadLetters.count
            statistics.evicted = state.evicted
            statistics.refused = state.refused
            return statistics
        }
    }

    public func close() async {
        state.withLock { $0.isClosed = true }
        availability.finish()
    }

    private static func selectedIDs(_ selection: DeadLetterSelection, in state: State) -> [Int64] {
        switch selection {
        case .all: Array(state.deadLetters.keys)
        case .ids(let ids): ids
        }
    }

    /// Merges entries, sorted by sequence, into a queue sorted by sequence.
    ///
    /// Released records usually go back as one run at the front; records queued meanwhile that fall inside the
    /// run's span (another part of the same claim, released earlier) are merged in.
    private static func insertInOrder(_ entries: [Entry], into queue: inout Deque<Entry>) {
        guard let first = entries.first?.sequence, let last = entries.last?.sequence else { return }
        var low = queue.startIndex
        var high = queue.endIndex
        while low < high {
            let middle = (low + high) / 2
            if queue[middle].sequence < first { low = middle + 1 } else { high = middle }
        }
        var end = low
        while end < queue.endIndex && queue[end].sequence < last { end += 1 }
        let merged = (Array(queue[low..<end]) + entries).sorted { $0.sequence < $1.sequence }
        queue.replaceSubrange(low..<end, with: merged)
    }
}
