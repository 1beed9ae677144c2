import Foundation
import GRDB
import Logging
import Synchronization

extension SQLiteSpool {
    /// Takes the damaged chunk `id` of `priority` out of the spool in one transaction: its row deleted, its
    /// readable records written as dead letters with the reason; then logs what could not be read. Its class goes
    /// on with the next chunk, and eviction past it. Runs on the writer, outside a transaction.
    func quarantine(chunk id: Int64, of priority: PriorityClass, _ damage: ChunkDamage, _ db: Database) throws {
        // Planned on the writer, so that no other write comes between the plan and its commit.
        guard let quarantine = ledger.withLock({ $0.planQuarantine(ofChunk: id, priority, damage: damage) }) else {
            return
        }
        try db.inTransaction {
            try Self.write(quarantine, db)
            return .commit
        }
        ledger.withLock { $0.applyQuarantine(quarantine) }
        Self.report(quarantine, logger: logger)
    }

    /// Quarantines from a claim, which reads chunks off the writer.
    func quarantine(chunk id: Int64, of priority: PriorityClass, _ damage: ChunkDamage) async throws {
        try await settlingWrite { db in try self.quarantine(chunk: id, of: priority, damage, db) }
    }

    /// Deletes the quarantined chunk's rows and inserts its dead letters, in the transaction under way.
    static func write(_ quarantine: SpoolLedger.Quarantine, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM chunk WHERE id = ?", arguments: [quarantine.chunkID])
        try db.execute(sql: "DELETE FROM chunk_settled WHERE chunk_id = ?", arguments: [quarantine.chunkID])
        try insertDeadLetters(
            quarantine.letters, priority: quarantine.storedPriority, status: nil, reason: quarantine.reason,
            failedAt: Timestamp.now().rfc3339, db)
    }

    /// A warning naming the chunk, its class, and what became of its records.
    static func report(_ quarantine: SpoolLedger.Quarantine, logger: Logger) {
        let priority = PriorityClass(rawValue: quarantine.storedPriority)?.description ?? "\(quarantine.storedPriority)"
        logger.warning(
            "a damaged spool chunk was quarantined: its readable records are dead letters, the rest is lost",
            metadata: [
                "logship.spool.chunk": "\(quarantine.chunkID)",
                "logship.spool.class": "\(priority)",
                "logship.spool.dead_lettered": "\(quarantine.letters.count)",
                "logship.spool.lost": "\(quarantine.unreadable.map(String.init) ?? "unknown")",
                "logship.spool.damage": "\(quarantine.damage)",
            ])
    }
}
