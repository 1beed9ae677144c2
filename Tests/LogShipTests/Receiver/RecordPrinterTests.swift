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
}
