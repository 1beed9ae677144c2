/// Why a stream socket refused a connection, as `logctl status --json` (`refusedConnections`) and the metrics
/// (`logshipd_connections_refused_total{reason}`) name it.
public enum ConnectionRefusal: String, CaseIterable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// Over `ingest.max_connections_per_user`, and held unread as long as a held connection may wait (on the
    /// ingest socket), or at once (on the control socket).
    case userCap = "user_cap"
    /// Over `ingest.max_connections` (the control socket; the ingest socket leaves such connections in the
    /// kernel's queue until a place frees).
    case connectionCap = "connection_cap"
    /// Accepting failed: the daemon or the system was out of file descriptors (the connection waits in the queue).
    case descriptors

    /// The reason in words, naming the key that sets the cap.
    public var description: String {
        switch self {
        case .userCap: "over ingest.max_connections_per_user"
        case .connectionCap: "over ingest.max_connections"
        case .descriptors: "out of file descriptors when accepting"
        }
    }
}
