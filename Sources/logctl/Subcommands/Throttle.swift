import ArgumentParser
import LogShipClient

/// `logctl throttle`: an upload budget of the operator's, until the next reload.
struct Throttle: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set the upload budget (request body bytes per second), or lift it, "
            + "until the next reload or restart.",
        discussion: """
            Examples: logctl throttle 256KiB/s; logctl throttle 1MiB; logctl throttle off. Crash records (the classes \
            of upload.rate.exempt) still go at once, and what they send is still spent from the budget. A reload \
            (SIGHUP) or a restart goes back to upload.rate.bytes_per_second. Off lifts upload.rate.requests_per_second \
            too. Needs root or logshipd's own user.
            """)

    @OptionGroup var control: ControlSocketOptions

    @Argument(help: "\(ByteRateText.expected); or off.")
    var rate: String

    func validate() throws {
        guard ByteRateText.parse(rate) != nil else {
            throw ValidationError("\"\(rate)\" is not a rate: expected \(ByteRateText.expected), or off")
        }
    }

    func run() throws {
        let bytesPerSecond: Int
        switch ByteRateText.parse(rate) {
        case .bytesPerSecond(let value): bytesPerSecond = value
        case .off, nil: bytesPerSecond = 0
        }
        _ = request(ControlRequest(command: .throttle, bytesPerSecond: bytesPerSecond), at: control.path)
        print(
            bytesPerSecond == 0
                ? "upload budget lifted until the next reload"
                : "upload budget \(ByteRateText.format(bytesPerSecond)) until the next reload")
    }
}
