import ArgumentParser
import Foundation

/// logshipd's command-line companion.
@main
struct Logctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logctl",
        abstract: "Send records to logshipd, ask for its status, or receive what it uploads.",
        subcommands: [Send.self, Status.self, Receive.self])
}

/// Where to find the daemon's control socket.
struct ControlSocketOptions: ParsableArguments {
    @Option(name: .long, help: "The control socket (default: $LOGSHIPD_CONTROL, else /run/logshipd/control.sock).")
    var socket: String?

    var path: String {
        socket ?? ProcessInfo.processInfo.environment["LOGSHIPD_CONTROL"] ?? "/run/logshipd/control.sock"
    }
}

/// Prints `logctl: <message>` to stderr and exits with status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("logctl: \(message)\n".utf8))
    exit(1)
}
