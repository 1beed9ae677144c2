/// How many connections the two stream sockets may hold within the open-file limit (`RLIMIT_NOFILE`): what the
/// limit leaves after the descriptors open at start and a headroom for those the daemon opens as it runs (upload
/// and metrics connections, journal files, SQLite's, a peer's `/proc/<pid>/comm`, and libdispatch's reads of
/// `/proc`, which end the process when they find no descriptor).
///
/// The control socket gets an eighth of it, at least twice the operators' reserve; the ingest stream socket the
/// rest, four fifths to serve and a fifth (a quarter of those served) for connections held over their user's
/// cap. Each keeps its configured cap where that fits.
struct DescriptorBudget: Equatable, Sendable {
    /// The places of one socket: connections in all, and served from one user.
    struct Places: Equatable, Sendable {
        var maximum: Int
        var maximumPerUser: Int
    }

    var ingest: Places
    /// Ingest connections that may wait unread over their user's cap (``ConnectionLimiter``'s `maximumHeld`).
    var ingestHeld: Int
    var control: Places
    /// Descriptors left for connections on both sockets.
    var available: Int

    /// - Parameters:
    ///   - limit: The open-file limit in force.
    ///   - open: Descriptors open now.
    ///   - headroom: Descriptors kept for what the daemon opens while it runs.
    ///   - configured: `ingest.max_connections` and `ingest.max_connections_per_user`.
    ///   - operatorReserve: The control socket's places for operators (``ControlServer/operatorReserve``).
    init(limit: Int, open: Int, headroom: Int, configured: Places, operatorReserve: Int) {
        available = max(0, limit - open - headroom)
        let controlMinimum = 2 * operatorReserve
        let controlMaximum = min(configured.maximum, max(controlMinimum, available / 8))
        let ingestMaximum = min(configured.maximum, max(1, (available - controlMaximum) * 4 / 5))
        ingest = Places(maximum: ingestMaximum, maximumPerUser: min(configured.maximumPerUser, ingestMaximum))
        ingestHeld = max(1, ingestMaximum / 4)
        control = Places(maximum: controlMaximum, maximumPerUser: min(configured.maximumPerUser, controlMaximum))
    }

    /// Whether a socket gets fewer places than configured (and so its users fewer, where the cap was above them).
    func isBelow(_ configured: Places) -> Bool {
        ingest.maximum < configured.maximum || control.maximum < configured.maximum
    }
}
