import Synchronization

/// Where every input hands its records: they are encoded and stored in the spool, which tells the shipper once
/// they are committed.
///
/// Intake also holds what one sender may cost the daemon: blank frames are dropped and counted, what one read
/// hands over (at most ``FrameBatcher/maximumFrames`` records) goes to the spool once the commit queue has room,
/// and a sender's crash claims are weighed against its ``CrashBudget``.
public final class RecordIntake: Sendable {
    /// Counts since start.
    public struct Statistics: Hashable, Sendable {
        public var received = 0
        public var truncated = 0
        /// Frames with nothing but whitespace, dropped.
        public var blank = 0
        /// Crash claims beyond their sender's budget, stored as errors.
        public var demoted = 0
    }

    private let spool: any Spool
    private let counters = Mutex(Statistics())
    private let crashBudget: Mutex<CrashBudget>

    public convenience init(spool: any Spool) {
        self.init(spool: spool, crashBudget: .default)
    }

    init(spool: any Spool, crashBudget: CrashBudget.Settings) {
        self.spool = spool
        self.crashBudget = Mutex(CrashBudget(crashBudget))
    }

    /// Stores records the host vouches for (the journal's) and returns once they are committed.
    ///
    /// - Parameters:
    ///   - position: Where the input has read to, committed with the records (the journal's cursor); with a
    ///     position, even an empty list is committed, so the input moves past what it filtered out.
    ///   - evicting: Whether older records may be evicted for these (see ``Spool/append(_:position:evicting:)``).
    /// - Returns: The spool's receipt; `refused` counts crash records that found no room, `deferred` records left
    ///   out whole because they would have needed evicting.
    /// - Throws: ``SpoolError`` when the spool could not store them at all (nor the position).
    @discardableResult
    public func append(
        _ records: [LogRecord], position: InputPosition? = nil, evicting: Bool = true
    ) async throws -> AppendReceipt {
        guard !records.isEmpty || position != nil else { return AppendReceipt() }
        let receipt = try await spool.append(records.map(SpoolEntry.init), position: position, evicting: evicting)
        if receipt.deferred == 0 { count(records.count, truncated: records.count { $0.truncated }) }
        return receipt
    }

    /// Stores what `sender` sent on the control socket (`logctl send`) and returns once it is committed: the
    /// acknowledgement means the records are safe. Crash claims beyond the sender's budget are stored as errors.
    ///
    /// - Returns: The spool's receipt, and how many crash claims were stored as errors.
    @discardableResult
    public func append(
        _ records: [LogRecord], from sender: PeerCredentials
    ) async throws -> (receipt: AppendReceipt, demoted: Int) {
        let demotions = admitCrashClaims(records.lazy.map { $0.priority == .crash }, uid: sender.uid)
        let admitted = demotions.isEmpty
            ? records
            : records.enumerated().map { demotions.contains($0.offset) ? $0.element.demotingCrashClaim() : $0.element }
        return (try await append(admitted), demotions.count)
    }

    /// Hands what one read of a socket gave to the spool's next commits without waiting for them: for the ingest
    /// sockets, whose clients expect no answer. Waits while the spool's commit queue is full, so that what a
    /// sender writes faster than the spool commits waits in its socket.
    ///
    /// - Parameters:
    ///   - records: The read's records, in order.
    ///   - sender: Who sent them, as the kernel reports it; crash claims are weighed against its uid's budget.
    public func enqueue(_ records: [EncodedRecord], from sender: PeerCredentials?) async throws {
        guard !records.isEmpty else { return }
        // A datagram without credentials (never seen with SO_PASSCRED) is weighed as uid -1's, the "nobody" of
        // the kernel's interfaces.
        let demotions = admitCrashClaims(records.lazy.map { $0.priority == .crash }, uid: sender?.uid ?? .max)
        count(records.count, truncated: records.count { $0.truncated })
        // The set is looked up only when a claim was taken back: nearly every read has none.
        try await spool.enqueue(demotions.isEmpty
            ? records.map(SpoolEntry.init)
            : records.indices.map { index in
                SpoolEntry(demotions.contains(index) ? records[index].demotingCrashClaim() : records[index])
            })
    }

    /// Lets every socket held until its records find room in the spool go on, and holds none from now on: the
    /// inputs are stopping, and the room may never come.
    public func stopHoldingSenders() {
        spool.stopHoldingSenders()
    }

    /// Applies a reloaded crash budget; what each user has spent carries over.
    func updateCrashBudget(_ settings: CrashBudget.Settings) {
        crashBudget.withLock { $0.settings = settings }
    }

    /// Counts frames dropped for holding nothing but whitespace.
    public func countBlank(_ frames: Int) {
        guard frames > 0 else { return }
        counters.withLock { $0.blank += frames }
    }

    public var statistics: Statistics { counters.withLock { $0 } }

    /// Weighs the crash claims among records against `uid`'s budget; returns the positions of those beyond it.
    private func admitCrashClaims(_ claims: some Collection<Bool>, uid: UInt32) -> Set<Int> {
        guard claims.contains(true) else { return [] }
        let now = ContinuousClock.now
        let demoted = crashBudget.withLock { budget in
            Set(claims.enumerated().filter { $0.element && !budget.admit(uid: uid, now: now) }.map(\.offset))
        }
        if !demoted.isEmpty { counters.withLock { $0.demoted += demoted.count } }
        return demoted
    }

    private func count(_ received: Int, truncated: Int) {
        counters.withLock { counters in
            counters.received += received
            counters.truncated += truncated
        }
    }
}
