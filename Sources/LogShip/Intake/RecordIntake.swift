import Logging
import Synchronization

/// Where every input hands its records: they are encoded, stored in the spool, and the shipper is told.
public final class RecordIntake: Sendable {
    /// Counts since start.
    public struct Statistics: Hashable, Sendable {
        public var accepted = 0
        public var truncated = 0
        public var evicted = 0
        public var refused = 0
    }

    private let spool: any Spool
    private let shipper: Shipper
    private let logger: Logger
    private let counters = Mutex(Statistics())

    public init(spool: any Spool, shipper: Shipper, logger: Logger) {
        self.spool = spool
        self.shipper = shipper
        self.logger = logger
    }

    /// Accepts records into the spool and wakes the shipper for their classes.
    ///
    /// - Returns: The spool's receipt; `refused` counts crash records that found no room.
    /// - Throws: ``SpoolError`` when the spool could not store them at all.
    @discardableResult
    public func accept(_ records: [LogRecord]) async throws -> AppendReceipt {
        guard !records.isEmpty else { return AppendReceipt() }
        let receipt = try await spool.append(records.map(SpoolEntry.init))
        shipper.recordsAvailable(Set(records.map(\.priority)))
        let truncated = records.count { $0.truncated }
        counters.withLock { counters in
            counters.accepted += receipt.accepted
            counters.truncated += truncated
            counters.evicted += receipt.evicted
            counters.refused += receipt.refused
        }
        if receipt.refused > 0 {
            logger.error(
                "spool full of crash records; crash records refused",
                metadata: ["logship.spool.refused": "\(receipt.refused)"])
        }
        return receipt
    }

    public var statistics: Statistics { counters.withLock { $0 } }
}
