import Synchronization

/// Where every input hands its records: they are encoded and stored in the spool, which tells the shipper once
/// they are committed.
public final class RecordIntake: Sendable {
    /// Counts since start.
    public struct Statistics: Hashable, Sendable {
        public var received = 0
        public var truncated = 0
    }

    private let spool: any Spool
    private let counters = Mutex(Statistics())

    public init(spool: any Spool) {
        self.spool = spool
    }

    /// Stores records and returns once they are committed: for `logctl send`, whose acknowledgement means the
    /// records are safe.
    ///
    /// - Parameters:
    ///   - position: Where the input has read to, committed with the records (the journal's cursor); with a
    ///     position, even an empty list is committed, so the input moves past what it filtered out.
    ///   - evicting: Whether older records may be evicted for these (see ``Spool/append(_:position:evicting:)``).
    /// - Returns: The spool's receipt; `refused` counts crash records that found no room, `deferred` records left
    ///   out whole because they would have needed evicting.
    /// - Throws: ``SpoolError`` when the spool could not store them at all (nor the position).
    @discardableResult
    public func accept(
        _ records: [LogRecord], position: InputPosition? = nil, evicting: Bool = true
    ) async throws -> AppendReceipt {
        guard !records.isEmpty || position != nil else { return AppendReceipt() }
        let receipt = try await spool.append(records.map(SpoolEntry.init), position: position, evicting: evicting)
        if receipt.deferred == 0 { count(records.count, truncated: records.count { $0.truncated }) }
        return receipt
    }

    /// Hands records to the spool's next commit without waiting for it: for the ingest sockets, whose clients
    /// expect no answer. Waits only while the spool's commit queue is full.
    public func submit(_ records: [EncodedRecord]) async throws {
        guard !records.isEmpty else { return }
        count(records.count, truncated: records.count { $0.truncated })
        try await spool.enqueue(records.map(SpoolEntry.init))
    }

    public var statistics: Statistics { counters.withLock { $0 } }

    private func count(_ received: Int, truncated: Int) {
        counters.withLock { counters in
            counters.received += received
            counters.truncated += truncated
        }
    }
}
