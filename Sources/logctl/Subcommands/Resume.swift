import ArgumentParser
import LogShipClient

/// `logctl resume`: restart uploads after `logctl pause`.
struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restart uploads paused with logctl pause; what waited goes out, crash reports first.",
        discussion: "Needs root or logshipd's own user.")

    @OptionGroup var control: ControlSocketOptions

    func run() throws {
        let response = request(ControlRequest(command: .resume), at: control.path)
        print(response.changed == false ? "uploads were not paused; nothing to resume" : "uploads resumed")
    }
}
