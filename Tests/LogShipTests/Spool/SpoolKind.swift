import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

/// The spools, each against the same rules: the in-memory one and the SQLite one on a real file.
enum SpoolKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite

    var testDescription: String { rawValue }

    func make(
        maximumBytes: Int = 1 << 30, path: String? = nil, minimumFreeDisk: Int = 1 << 20
    ) async throws -> any Spool & DeadLetterStore {
        switch self {
        case .memory:
            return MemorySpool(maximumBytes: maximumBytes, logger: .test)
        case .sqlite:
            let path = try path ?? "\(TemporaryDirectory.make())/spool.db"
            return try await SQLiteSpool.open(
                path: path, maximumBytes: maximumBytes, minimumFreeDiskBytes: minimumFreeDisk, logger: .test)
        }
    }
}

func entry(_ priority: PriorityClass, _ text: String, padding: Int = 0) -> SpoolEntry {
    SpoolEntry(priority: priority, line: Array(text.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: padding))
}

func messages(_ batch: Batch) -> [String] {
    batch.records.map { String(decoding: $0.line, as: UTF8.self).trimmingCharacters(in: .whitespaces) }
}

func claimBatch(_ spool: any Spool, _ priority: PriorityClass, maxRecords: Int = 100, maxBytes: Int = 1 << 20)
    async throws -> Batch
{
    guard case .batch(let batch, _) = try await spool.claim(
        priority, limits: BatchLimits(maxRecords: maxRecords, maxBytes: maxBytes))
    else {
        throw WaitTimeout(description: "no batch of \(priority)")
    }
    return batch
}

extension Spool {
    /// Settles `batch` as delivered and returns once the delete is committed, for a test to look at the counts
    /// after it (delivery does not wait: ``Settlement/delivered``).
    func acknowledge(_ batch: Batch) async throws {
        if let spool = self as? SQLiteSpool {
            try await spool.acknowledge(batch)
        } else {
            try await settle(batch, .delivered)  // applied at once
        }
    }
}
