import Foundation
import LogShip
import LogShipTestKit
import Testing

/// What `logctl receive` shows of each request.
@Suite("Record printer")
struct RecordPrinterTests {
    @Test("each record shows its batch number, and a record the receiver refused is marked with the status it got")
    func refusedAndBatchMarked() async throws {
        // The first request is refused; the retry of the same batch is accepted.
        let receiver = try await TestReceiver(behavior: .init(decide: { sequence, _ in sequence == 0 ? 503 : nil }))
        let daemon = try await TestDaemon.start(receiver: receiver)
        #expect(try await daemon.send([Submission(message: "disk failed", priority: "error")]).ok)
        try await receiver.waitUntil { $0.contains { $0.status == 200 } }
        try await daemon.stop()

        let requests = receiver.requests.sorted { $0.sequence < $1.sequence }
        let refused = try #require(requests.first)
        let accepted = try #require(requests.first { $0.status == 200 })
        let batch = try #require(refused.batch)
        let printer = RecordPrinter(colored: false, quiet: false)
        #expect(printer.text(for: refused).hasPrefix("[#\(batch) refused 503] "), "\(printer.text(for: refused))")
        let acceptedText = printer.text(for: accepted)
        #expect(acceptedText.hasPrefix("[#\(try #require(accepted.batch))] ") && acceptedText.contains("disk failed"))
        #expect(!acceptedText.contains("refused"))
        let quiet = RecordPrinter(colored: false, quiet: true).text(for: refused)
        #expect(quiet == "request \(refused.sequence) (batch \(batch)): 1 records, answered 503\n")
    }

    @Test("""
        --json prints each request on one line: its records with their ids, a repeat dropped and counted, or kept and \
        marked
        """)
    func jsonLines() async throws {
        // The first request is stored and left unanswered: the same record comes again, under the same id.
        let receiver = try await TestReceiver(behavior: .init(closesUnanswered: { $0 == 0 }))
        let daemon = try await TestDaemon.start(receiver: receiver)
        #expect(try await daemon.send([Submission(message: "disk failed", priority: "error")]).ok)
        try await receiver.waitUntil { $0.contains { $0.sequence > 0 && !$0.records.isEmpty } }
        try await daemon.stop()
        let requests = receiver.requests.sorted { $0.sequence < $1.sequence }
        let (first, again) = (try #require(requests.first), try #require(requests.last))
        let id = try #require(first.recordIDs.first ?? nil)

        // The printer is handed the repeats its caller found, as `print` does.
        func printed(keepsDuplicates: Bool, quiet: Bool = false) throws -> [[String: Any]] {
            let deduplicator = RecordDeduplicator()
            let printer = RecordPrinter(
                colored: false, quiet: quiet, deduplicator: deduplicator, keepsDuplicates: keepsDuplicates, json: true)
            return try [first, again].map { request in
                let text = printer.text(
                    for: request, repeats: deduplicator.repeats(in: request),
                    duplicatesSinceStart: deduplicator.duplicates)
                #expect(text.hasSuffix("\n") && !text.dropLast().contains("\n"), "one line: \(text)")
                return try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            }
        }

        let dropped = try printed(keepsDuplicates: false)
        let firstRecords = try #require(dropped[0]["records"] as? [[String: Any]])
        #expect(firstRecords.map { $0["id"] as? String } == [id])
        #expect(firstRecords.map { $0["message"] as? String } == ["disk failed"])
        #expect(firstRecords.map { $0["duplicate"] as? Bool } == [false])
        #expect(dropped[1]["duplicates"] as? Int == 1 && dropped[1]["duplicates_since_start"] as? Int == 1)
        #expect((dropped[1]["records"] as? [Any])?.isEmpty == true, "the repeat is dropped")

        let kept = try printed(keepsDuplicates: true)
        let keptRecords = try #require(kept[1]["records"] as? [[String: Any]])
        #expect(keptRecords.map { $0["id"] as? String } == [id])
        #expect(keptRecords.map { $0["duplicate"] as? Bool } == [true])

        let quiet = try printed(keepsDuplicates: false, quiet: true)
        #expect(quiet[1]["records"] == nil && quiet[1]["fresh"] as? Int == 0 && quiet[1]["duplicates"] as? Int == 1)
    }
}
