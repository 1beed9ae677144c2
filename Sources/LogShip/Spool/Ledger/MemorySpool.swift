import Foundation
import Logging
import Synchronization

/// A spool that keeps records in memory only, bounded by a byte budget (`spool.path: memory`).
///
/// It is the durable spool's ``SpoolLedger`` with every chunk's lines kept in memory: claims, unclaims, eviction
/// and dead letters follow the same rules, and each write the ledger plans is applied at once. Appends take
/// effect at once; ``enqueue(_:)`` differs from ``append(_:position:evicting:)`` only in waiting for room, where
/// the other refuses, until a settlement makes some.
///
/// - Important: Everything here is lost when the process exits; use it where no local storage is wanted.
public final class MemorySpool: Spool, DeadLetterStore {
    private struct State {
        var ledger = SpoolLedger(cacheBudget: .init(delivering: .max, stalled: .max), instance: .random())
        /// Dead letters by id, in the order they were set aside.
        var deadLetters: [Int64: StoredDeadLetter] = [:]
        var nextDeadLetterID: Int64 = 1
        /// Input positions, for this process's life only.
        var positions: [String: String] = [:]
        /// Settlements so far: room may have been made since a caller last found none.
        var settlements = 0
        /// Records ``enqueue(_:)`` holds until room is made, and the callers that hold them.
        var waitingForRoom = 0
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        /// Until ``stopHoldingSenders()``: ``enqueue(_:)`` waits for room.
        var holdsSenders = true
    }

    private struct StoredDeadLetter {
        var letter: DeadLetter
        var priority: PriorityClass
        var sequence: Int64
        var line: [UInt8]
    }

    private let maximumBytes: Int
    private let logger: Logger
    private let reports: SpoolRoomReports
    private let state = Mutex(State())
    public let availability = Availability()

    /// - Parameter maximumBytes: The budget for stored lines plus per-record overhead.
    public init(maximumBytes: Int, logger: Logger) {
        self.maximumBytes = maximumBytes
        self.logger = logger
        reports = SpoolRoomReports(logger: logger)
    }

    public func append(
        _ entries: [SpoolEntry], position: InputPosition?, evicting: Bool
    ) async throws -> AppendReceipt {
        try store(SpoolAppend(entries: entries, position: position, evicting: evicting)).receipt
    }

    public func enqueue(_ entries: [SpoolEntry]) async throws {
        var group = SpoolAppend(entries: entries, waitsForRoom: true)
        while true {
            let (_, waiting, generation) = try store(group)
            guard let waiting else { return }
            guard state.withLock({ $0.holdsSenders }) else {
                // Nowhere to keep them but here, and the inputs are stopping: they are lost, and said so.
                state.withLock { $0.ledger.refused += waiting.entries.count }
                logger.error(
                    "records from the ingest sockets found no room in the spool while logshipd stopped; they are lost",
                    metadata: ["logship.spool.lost": "\(waiting.entries.count)"])
                return
            }
            // What this call stored may be evicted for the rest (a sender's own records, the heaviest): try again
            // at once. Otherwise only a settlement makes room.
            if waiting.entries.count == group.entries.count {
                await waitForRoom(holding: waiting.entries.count, since: generation)
            }
            group = waiting
        }
    }

    /// Stores what of `group` fits; returns its receipt, what of it waits for room, and how many settlements
    /// there had been, for ``waitForRoom(holding:since:)``.
    private func store(
        _ group: SpoolAppend
    ) throws -> (receipt: AppendReceipt, waiting: SpoolAppend?, generation: Int) {
        let (receipt, waiting, generation, plan) = try withOpenState { state in
            // Every chunk's lines are here: planning never needs to read any. No disk: the budget alone bounds
            // the room.
            guard case .plan(let plan) = state.ledger.planAppend([group], maximumBytes: maximumBytes, disk: .unlimited)
            else { preconditionFailure("a memory spool holds every chunk's lines") }
            state.ledger.apply(plan.writes)
            state.ledger.count(plan)
            for position in plan.positions { state.positions[position.input] = position.cursor }
            return (plan.receipts.first ?? AppendReceipt(), plan.waiting[0], state.settlements, plan)
        }
        if !plan.classes.isEmpty { availability.announce(plan.classes) }
        reports.note(plan.room)
        return (receipt, waiting, generation)
    }

    /// Waits, its `count` records counted as waiting, until a settlement after the `generation`-th, or until the
    /// spool closes.
    private func waitForRoom(holding count: Int, since generation: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.settlements != generation || state.ledger.isClosed || !state.holdsSenders { return true }
                state.waitingForRoom += count
                state.roomWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    public func stopHoldingSenders() {
        let waiters = state.withLock { state in
            state.holdsSenders = false
            state.waitingForRoom = 0
            defer { state.roomWaiters = [] }
            return state.roomWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Lets every caller waiting for room try again: a settlement may have made some.
    private func roomMayHaveChanged() {
        let waiters = state.withLock { state in
            state.settlements += 1
            state.waitingForRoom = 0
            defer { state.roomWaiters = [] }
            return state.roomWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public func savedPosition(of input: String) async throws -> String? {
        try withOpenState { $0.positions[input] }
    }

    public func claim(_ priority: PriorityClass, limits: BatchLimits) async throws -> ClaimResult {
        try withOpenState { state in
            guard case .done(let result) = state.ledger.claim(priority, limits: limits) else {
                preconditionFailure("a memory spool holds every chunk's lines")
            }
            return result
        }
    }

    public func settle(_ batch: Batch, _ settlement: Settlement) async throws {
        switch settlement {
        case .delivered:
            state.withLock { state in
                let writes = state.ledger.settle([batch]).writes
                state.ledger.apply(writes)
            }
        case .putBack:
            state.withLock { $0.ledger.unclaim(batch) }
        case .deadLetter(let failure):
            deadLetter(batch, failure: failure)
        }
        roomMayHaveChanged()
    }

    private func deadLetter(_ batch: Batch, failure: DeliveryFailure) {
        let failedAt = Timestamp.now().rfc3339
        let trimmed = state.withLock { state in
            let plan = state.ledger.planDeadLetters(batch, maximumBytes: maximumBytes)
            state.ledger.apply(plan.writes)
            for record in plan.letters {
                let id = state.nextDeadLetterID
                state.nextDeadLetterID += 1
                let letter = DeadLetter(
                    id: id, priority: batch.priority.description, line: String(decoding: record.line, as: UTF8.self),
                    status: failure.status, reason: failure.reason, failedAt: failedAt)
                state.deadLetters[id] = StoredDeadLetter(
                    letter: letter, priority: batch.priority, sequence: record.sequence, line: Array(record.line))
            }
            // Beyond their share, the oldest give way.
            var excess = plan.excess
            var trimmed = (count: 0, lineBytes: 0)
            for id in state.deadLetters.keys.sorted() where excess > 0 {
                guard let letter = state.deadLetters.removeValue(forKey: id) else { continue }
                trimmed.count += 1
                trimmed.lineBytes += letter.line.count
                excess -= letter.line.count + SpoolEntry.overhead
            }
            state.ledger.countDeadLetters(added: plan.letters, trimmed: trimmed)
            return trimmed.count
        }
        logger.reportEvictedDeadLetters(trimmed)
    }

    public func arrivalMark() async throws -> ArrivalMark {
        try withOpenState { $0.ledger.arrivalMark() }
    }

    public func heldRecords(upTo mark: ArrivalMark, in classes: Set<PriorityClass>) async throws -> Int {
        try withOpenState { $0.ledger.heldRecords(upTo: mark, in: classes) }
    }

    public func oldestTimestamps() async throws -> [PriorityClass: Timestamp] {
        try withOpenState { state in
            state.ledger.oldestRecords().compactMapValues { oldest in
                oldest.line.flatMap(SpoolEntry.timestamp(ofLine:))
            }
        }
    }

    public func deadLetters(limit: Int) async throws -> [DeadLetter] {
        state.withLock { state in
            Array(state.deadLetters.values.map(\.letter).sorted { $0.id < $1.id }.prefix(limit))
        }
    }

    public func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let classes = try state.withLock { state -> [PriorityClass] in
            let requeued = try Self.selectedIDs(selection, in: state)
                .compactMap { state.deadLetters.removeValue(forKey: $0) }
                .sorted { $0.sequence < $1.sequence }
            guard !requeued.isEmpty else { return [] }
            let letters = requeued.map {
                SpoolLedger.RequeuedLetter(priority: $0.priority, sequence: $0.sequence, line: $0.line)
            }
            let (writes, changes) = state.ledger.requeue(letters)
            state.ledger.apply(writes)
            state.ledger.markRequeued(changes, letters: letters)
            return requeued.map(\.priority)
        }
        if !classes.isEmpty { availability.announce(Set(classes)) }
        return classes.count
    }

    public func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int {
        let purged = try state.withLock { state in
            let purged = try Self.selectedIDs(selection, in: state)
                .compactMap { state.deadLetters.removeValue(forKey: $0) }
            state.ledger.removeDeadLetters(count: purged.count, lineBytes: purged.reduce(0) { $0 + $1.line.count })
            return purged.count
        }
        roomMayHaveChanged()
        return purged
    }

    public func statistics() async -> SpoolStatistics {
        state.withLock { state in
            var statistics = state.ledger.statistics()
            statistics.waitingForRoom = state.waitingForRoom
            return statistics
        }
    }

    public func close() async {
        state.withLock { $0.ledger.isClosed = true }
        roomMayHaveChanged()
        availability.finish()
    }

    /// Runs `body` on the state unless the spool is closed.
    ///
    /// - Throws: ``SpoolError/closed`` once it is.
    private func withOpenState<T>(_ body: (inout State) throws -> T) throws -> T {
        try state.withLock { state in
            guard !state.ledger.isClosed else { throw SpoolError.closed }
            return try body(&state)
        }
    }

    /// The ids `selection` names; throws ``UnknownDeadLetters`` if some name no dead letter.
    private static func selectedIDs(_ selection: DeadLetterSelection, in state: State) throws -> [Int64] {
        switch selection {
        case .all:
            return Array(state.deadLetters.keys)
        case .ids(let ids):
            let unknown = ids.filter { state.deadLetters[$0] == nil }
            if !unknown.isEmpty { throw UnknownDeadLetters(ids: unknown) }
            return ids
        }
    }
}
