import ArgumentParser
import LogShipClient

/// `logctl pause`: stop uploads while intake goes on.
struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop uploads; records keep being accepted and wait in the spool.",
        discussion: "Requests in flight finish. Needs root or logshipd's own user. A restart of logshipd resumes.")

    @OptionGroup var control: ControlSocketOptions

    func run() throws {
        let response = request(ControlRequest(command: .pause), at: control.path)
        print(response.changed == false ? "uploads were paused already" : "uploads paused")
    }
}
