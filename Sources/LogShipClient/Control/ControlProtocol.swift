#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The messages `logctl` and the daemon exchange on the control socket: one JSON object per line each way, one
/// response per request, in order, after the daemon's greeting.
public enum ControlProtocol {
    /// The line the daemon writes first on every control connection, before any request.
    ///
    /// A client sends nothing until it has read it: a client pointed at another socket finds out instead of
    /// waiting forever, and its request is never shipped upstream as a log record.
    public static let greeting = #"{"logshipd":"control","protocol":1}"#

    /// The line the daemon writes instead of the greeting to a connection it will not serve (too many are
    /// open), before it closes it: so that a client says why, rather than that the connection closed.
    package static func refusal(_ reason: String) -> String {
        let line = try? JSONEncoder().encode(Refusal(logshipd: "control", error: reason))
        return line.map { String(decoding: $0, as: UTF8.self) } ?? greeting
    }

    /// The reason a refusal line gives, or `nil` for any other line.
    static func refusalReason(_ line: some Sequence<UInt8>) -> String? {
        guard let refusal = try? JSONDecoder().decode(Refusal.self, from: Data(line)), refusal.logshipd == "control"
        else { return nil }
        return refusal.error
    }

    private struct Refusal: Codable {
        var logshipd: String
        var error: String
    }

    /// How long a client waits for the greeting before it asks the kernel why none came (``SilentPeer``). The
    /// daemon writes the greeting the moment it accepts a connection, from the thread that accepts, so that a
    /// busy daemon greets at once; one still starting (its sockets held by systemd) greets once it runs.
    public static let greetingTimeout = Duration.seconds(5)

    /// The longest request line the daemon reads: a longer one is answered with an error, and what a client has
    /// sent of it is never held whole.
    public static let maximumRequestBytes = 1 << 20
}
