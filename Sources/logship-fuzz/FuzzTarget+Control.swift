import Foundation
import LogShipRecord

/// What must hold for any line a client sends the control socket: it is a request or a clean refusal, and a
/// `send` request's records carry the socket's peer as their sender, whatever they claim, never more than the
/// record limit, and survive NDJSON; a crash claim taken back is an error that keeps its content.
extension FuzzTarget {
    static func checkControlRequest(_ line: [UInt8], limit: Int) {
        guard let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line)) else { return }
        let peer = PeerCredentials(pid: 4242, uid: 1000, gid: 1000, comm: "client")
        let reader = SubmissionReader(hostname: "fuzz", maximumRecordBytes: limit)
        for submission in request.records ?? [] {
            guard case .success(let record) = reader.record(
                from: submission, peer: peer, receivedAt: Timestamp(microsecondsSinceEpoch: 1_795_255_200_000_000))
            else { continue }
            precondition(record.peer == peer && record.source == .control, "a submission set its own sender")
            precondition(record.message.utf8.count <= limit, "a message is longer than the record limit")
            precondition(
                record.message.utf8.count == submission.message.utf8.count || record.truncated,
                "a message was cut without being marked")
            let decoded = try? JSONDecoder().decode(LogRecord.self, from: Data(record.ndjsonLine))
            precondition(decoded == record, "a submitted record changed on its way through NDJSON")

            let demoted = EncodedRecord(record).demotingCrashClaim()
            precondition(demoted.priority != .crash, "a crash claim taken back is still crash")
            if record.priority == .crash {
                var expected = record
                expected.priority = .error
                expected.fields[LogRecord.demotedFromField] = "crash"
                precondition(demoted == EncodedRecord(expected), "taking a crash claim back changed its content")
            }
        }
    }
}
