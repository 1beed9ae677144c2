/// What `logctl status` shows, and `logctl status --json` prints as it is.
public struct DaemonStatus: Codable, Hashable, Sendable {
    /// logshipd's version.
    public var version = ""
    /// Seconds since the daemon started.
    public var uptimeSeconds = 0.0
    /// Records received from all inputs since start.
    public var received = 0
    public var truncated = 0
    /// Frames with nothing but whitespace, dropped since start.
    public var blank = 0
    /// Crash claims beyond their sender's crash budget, stored as errors since start.
    public var demoted = 0
    /// Unclaimed records in the spool per class name.
    public var pending: [String: Int] = [:]
    /// Seconds since the oldest record of each class the spool holds was written (by its timestamp).
    public var oldestPendingAgeSeconds: [String: Double] = [:]
    /// Records claimed by requests in flight.
    public var claimed = 0
    public var spoolBytes = 0
    /// `spool.max_bytes`.
    public var spoolBudget = 0
    /// Records evicted to make room, and records refused for want of it, since start.
    public var evicted = 0
    public var refused = 0
    /// Of those, what the spool's disk was short for (it reached what the spool leaves free), not its budget.
    public var evictedForDisk = 0
    public var refusedForDisk = 0
    /// When the disk last was (RFC 3339).
    public var lastDiskShortageAt: String?
    /// Records from the ingest sockets that wait for room in the spool; the sockets are not read meanwhile.
    public var waitingForRoom = 0
    /// The durable spool's filesystem: bytes free, its size, what the spool leaves free there
    /// (`spool.min_free_disk`, or less on a filesystem too small for it; the configured value beside it), and the
    /// reserve held for the spool's own writes (0 once given to a full disk). Absent for a spool in memory.
    public var spoolDiskFree: Int?
    public var spoolDiskSize: Int?
    public var spoolDiskMinimumFree: Int?
    public var spoolDiskMinimumFreeConfigured: Int?
    public var spoolDiskReserve: Int?
    /// Damaged spool chunks quarantined since start, the records they held, and of those the ones that could
    /// not be read (lost); the others became dead letters.
    public var quarantinedChunks = 0
    public var quarantinedRecords = 0
    public var unreadableRecords = 0
    /// Where the spool file was set aside at start because it could not be opened as a database, and why.
    public var spoolSetAside: String?
    public var spoolSetAsideReason: String?
    /// Records the remote accepted since start.
    public var delivered = 0
    /// Records moved to the dead-letter table since start.
    public var deadLettered = 0
    /// Records in the dead-letter table now.
    public var deadLetters = 0
    /// Requests sent since start.
    public var requests = 0
    /// Requests the remote did not accept since start (no answer, or a status outside 2xx): `retriedRequests`
    /// plus `rejectedRequests`.
    public var failedRequests = 0
    /// Failed requests that were not the records' fault; their records went back whole, to be sent again.
    public var retriedRequests = 0
    /// Failed requests the remote refused for the records they held; split, a lone refused record dead-lettered.
    public var rejectedRequests = 0
    public var inFlight = 0
    /// When delivery resumes after a failure, RFC 3339, if it is paused.
    public var pausedUntil: String?
    /// Why delivery is paused: `remote unavailable` or `remote refuses the endpoint or the credentials`.
    public var pauseCause: String?
    /// The failure that paused delivery, in one line (`HTTP 401: …`); after the pause, until a request succeeds.
    public var lastFailure: String?
    /// The latest failed request since start (or failure of the spool while settling one), in words, and when
    /// (RFC 3339). Kept when requests succeed after it, which `lastErrorPast` then says.
    public var lastError: String?
    public var lastErrorAt: String?
    /// Whether the remote has accepted a request since `lastError`: the failure is over, or was one batch's.
    public var lastErrorPast = false
    /// When the remote last accepted a request (RFC 3339).
    public var lastAcceptedAt: String?
    /// Whether an operator paused uploads (`logctl pause`).
    public var operatorPaused = false
    /// The endpoints of `upload.url`, in order of preference: which one delivery goes to, and what each is doing.
    /// The pause and failure above are the active one's.
    public var endpoints: [EndpointStatus] = []
    /// The upload budget in force, request body bytes per second (`upload.rate.bytes_per_second`, or
    /// `logctl throttle`); absent when there is none.
    public var rateBudget: Int?
    /// Whether ``rateBudget`` is an operator's (`logctl throttle`), until the next reload.
    public var rateBudgetByOperator = false
    /// The rate uploads may go at now, bytes per second: the budget, or less while the receiver is overloaded
    /// (429 or 503); absent when there is no limit.
    public var rateEffective: Int?
    /// Whether the receiver's overload holds the rate down.
    public var rateHeldDownByReceiver = false
    /// The request budget (`upload.rate.requests_per_second`); absent when there is none.
    public var rateRequestsPerSecond: Double?
    /// Seconds each class has waited for the upload budget since start, per class name.
    public var throttledSeconds: [String: Double] = [:]
    /// Connections the stream sockets refused since start, per reason (``ConnectionRefusal``'s raw values:
    /// `user_cap`, `connection_cap`, `descriptors`); absent reasons never happened.
    public var refusedConnections: [String: Int] = [:]
    /// The journal input's state, when it is enabled.
    public var journal: JournalStatus?

    public init() {}
}
