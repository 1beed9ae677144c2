import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LogShipClient

/// logshipd's command-line companion.
@main
struct Logctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logctl",
        abstract: "Send records to logshipd, ask for its status, or receive what it uploads.",
        version: LogShipVersion.current,
        subcommands: [
            Send.self, Status.self, Flush.self, Pause.self, Resume.self, Throttle.self, DeadLetters.self, Receive.self,
        ])
}

/// Where to find the daemon's control socket.
struct ControlSocketOptions: ParsableArguments {
    @Option(name: .long, help: "The control socket (default: $LOGSHIPD_CONTROL, else /run/logshipd/control.sock).")
    var socket: String?

    var path: String {
        socket ?? ProcessInfo.processInfo.environment["LOGSHIPD_CONTROL"] ?? "/run/logshipd/control.sock"
    }
}

/// Sends one request and returns the response; on any failure prints the reason and exits 1.
func request(_ request: ControlRequest, at path: String) -> ControlResponse {
    signal(SIGPIPE, SIG_IGN)
    let response: ControlResponse
    do {
        response = try ControlClient(path: path).send(request)
    } catch {
        fail("\(error)")
    }
    guard response.ok else { fail(response.error ?? "request refused") }
    return response
}

/// Prints `logctl: <message>` to stderr and exits with status 1.
func fail(_ message: String) -> Never {
    UnbufferedOutput.write("logctl: \(message)\n", to: STDERR_FILENO)
    exit(1)
}
