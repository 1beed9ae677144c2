import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

/// A spooled line that a format reading the records cannot write (a damaged row, a line stored by something else)
/// is set aside alone; the records around it are delivered, and nothing is retried forever.
@Suite("Unencodable records")
struct UnencodableRecordTests {
    @Test("a spooled line that is not a record's line is dead-lettered alone; the rest of its batch reaches the remote",
          arguments: [UploadFormat.otlp, .loki, .journal])
    func isolated(format: UploadFormat) async throws {
        let directory = try TemporaryDirectory.make()
        let path = "\(directory)/spool.db"
        // Spooled before the daemon starts, as records left from an earlier run are.
        let damaged = #"{"message": not a record"#
        let spool = try await SQLiteSpool.open(
            path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 1 << 20, logger: .test)
        let lines = (0..<12).map { $0 == 5 ? Array(damaged.utf8) : UploadClientTests.line("good \($0)") }
        _ = try await spool.append(lines.map { SpoolEntry(priority: .info, line: $0) })
        await spool.close()

        let receiver = try await TestReceiver()
        let daemon = try await TestDaemon.start(receiver: receiver, directory: directory) {
            $0.spool.path = path
            $0.upload.format = format
        }
        try await receiver.waitFor(records: 11)
        // Settled: delivered records stay claimed until their delete is committed, a few milliseconds later.
        try await eventually {
            let status = try await daemon.status()
            return status.deadLettered == 1 && status.claimed == 0 && status.pending.values.reduce(0, +) == 0
        }
        let status = try await daemon.status()
        #expect(status.deadLettered == 1 && status.delivered == 11)
        #expect(status.pausedUntil == nil, "the remote is not at fault: delivery does not pause")
        #expect(receiver.records.map(\.message).sorted() == (0..<12).filter { $0 != 5 }.map { "good \($0)" }.sorted())
        #expect(receiver.records.count == 11, "each written record sent once")
        #expect(receiver.requests.allSatisfy { $0.status == 200 }, "only what could be written was sent")
        #expect(status.requests == receiver.requests.count, "what could not be written is no request")
        #expect(status.failedRequests == 0 && status.rejectedRequests == 0)
        try await daemon.stop(keepDirectory: true)

        let reopened = try await SQLiteSpool.open(
            path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 1 << 20, logger: .test)
        let deadLetters = try await reopened.deadLetters(limit: 10)
        await reopened.close()
        try? FileManager.default.removeItem(atPath: directory)
        #expect(deadLetters.map(\.line) == [damaged])
        #expect(deadLetters.first?.status == nil)
        #expect(deadLetters.first?.reason.contains("not a spooled record line") == true)
    }
}
