import ArgumentParser
import Foundation
import LogShip

/// `logctl status`: what the daemon has accepted, delivered and still holds.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show logshipd's counters.")

    @OptionGroup var control: ControlSocketOptions

    func run() throws {
        let status: DaemonStatus
        do {
            let response = try ControlClient(path: control.path).send(ControlRequest(command: .status))
            guard response.ok, let reported = response.status else { fail(response.error ?? "no status in response") }
            status = reported
        } catch {
            fail("\(error)")
        }
        let pending = PriorityClass.mostUrgentFirst.map { "\($0)=\(status.pending[$0.description] ?? 0)" }
        print("accepted   \(status.accepted) (truncated \(status.truncated))")
        print("delivered  \(status.delivered) (failed requests \(status.failedRequests), in flight \(status.inFlight))")
        print("pending    \(pending.joined(separator: " "))")
        print("evicted    \(status.evicted), refused \(status.refused)")
    }
}
