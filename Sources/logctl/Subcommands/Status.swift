import ArgumentParser
import Foundation
import LogShip

/// `logctl status`: what the daemon has received, delivered and still holds.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show logshipd's counters.")

    @OptionGroup var control: ControlSocketOptions

    func run() throws {
        let response = request(ControlRequest(command: .status), at: control.path)
        guard let status = response.status else { fail("no status in the response") }
        let pending = PriorityClass.mostUrgentFirst.map { "\($0)=\(status.pending[$0.description] ?? 0)" }
        print("received      \(status.received) (truncated \(status.truncated))")
        print("pending       \(pending.joined(separator: " ")), in flight \(status.claimed)")
        print("spool         \(status.spoolBytes) bytes, evicted \(status.evicted), refused \(status.refused)")
        print("delivered     \(status.delivered) in \(status.requests) requests (\(status.failedRequests) failed, \(status.inFlight) open)")
        print("dead letters  \(status.deadLetters)")
        if status.operatorPaused == true {
            print("uploads       paused by an operator (logctl resume restarts them)")
        }
        if let pausedUntil = status.pausedUntil {
            print("paused until  \(pausedUntil): \(status.pauseCause ?? "remote failed") (\(status.lastFailure ?? "?"))")
        } else if let lastFailure = status.lastFailure {
            print("retrying      after \(lastFailure)")
        }
        if let journal = status.journal {
            let behind = journal.behindSeconds.map { String(format: ", %.1f s behind the newest entry", $0) } ?? ""
            print("journal       \(journal.state); read \(journal.read) (\(journal.filtered) left out)"
                + "; saved position \(journal.position ?? "none")\(behind)")
        }
    }
}
