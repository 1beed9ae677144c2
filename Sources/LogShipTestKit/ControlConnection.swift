import LogShip
import Synchronization

/// A connection to a daemon's control socket for tests: ``ControlClient``'s blocking calls, each made on a thread
/// of its own.
///
/// Connecting waits for the daemon's greeting, and a request for its answer (a flush for as long as its timeout).
/// Made straight from a test, either call holds one of the two threads of the cooperative pool every test shares,
/// and every sleeping task of the test process waits with it.
public final class ControlConnection: Sendable {
    /// One exchange at a time: a request sent before the previous one's answer is read would be given that answer.
    private let client: Mutex<ControlClient>

    private init(_ client: sending ControlClient) {
        self.client = Mutex(client)
    }

    /// Connects to the control socket at `path` and reads the daemon's greeting.
    ///
    /// - Parameter greetingTimeout: A minute, like every wait of the tests: a test process runs many daemons at
    ///   once on a shared machine.
    /// - Throws: ``ControlClientError`` saying why the daemon cannot be reached.
    public static func connect(
        path: String, greetingTimeout: Duration = .seconds(60)
    ) async throws -> ControlConnection {
        try await offloaded { ControlConnection(try ControlClient(path: path, greetingTimeout: greetingTimeout)) }
    }

    /// Sends `request` and returns the daemon's answer, connecting again if the daemon closed an idle connection.
    ///
    /// - Throws: ``ControlClientError`` if the connection breaks or the answer is not a response.
    public func send(_ request: ControlRequest) async throws -> ControlResponse {
        try await offloaded { try self.client.withLock { try $0.send(request) } }
    }
}
