import Foundation

extension Shipper {
    /// Counts since start, and what delivery is doing now.
    public struct Statistics: Sendable {
        /// Counts of every request finished since start.
        public var totals = DeliveryCounts()
        public var operationsInFlight = 0
        /// Set while all delivery is paused after a failure.
        public var pause: DeliveryPause?
        /// When that pause ends, on the wall clock.
        public var pausedUntil: Date?
        /// Set after a pause ended while nothing has been answered since.
        public var lastFailure: DeliveryPause?
        /// Whether an operator paused uploads (`logctl pause`).
        public var pausedByOperator = false
        /// The latest failure since start (of a request, or of the spool), and when.
        public var lastError: LastError?
        /// When the remote last accepted a request; a ``lastError`` before it is past.
        public var lastAcceptedAt: Date?
        /// Seconds each class has waited for the link's budget since start.
        public var throttledSeconds: [PriorityClass: TimeInterval] = [:]
        /// The endpoints of `upload.url`, in order of preference.
        public var endpoints: [EndpointStatistics] = []
        /// The place among ``endpoints`` of the one delivery goes to; the link's state above is its.
        public var activeEndpoint = 0
    }
}

extension Shipper.Statistics {
    /// What delivery is doing, in words: `remote accepting`, `uploads paused by an operator`, `paused until
    /// <time>: remote unavailable (cannot connect to 127.0.0.1:8514: connection refused)` or `retrying after …`;
    /// with more than one endpoint, which one it is: `remote accepting (endpoint 2 of 2, https://b.example/ingest)`.
    public var remoteState: String {
        guard endpoints.count > 1, endpoints.indices.contains(activeEndpoint) else { return activeState }
        let active = endpoints[activeEndpoint].name
        return "\(activeState) (endpoint \(activeEndpoint + 1) of \(endpoints.count), \(active))"
    }

    /// What the active endpoint is doing, in words.
    private var activeState: String {
        if pausedByOperator {
            "uploads paused by an operator"
        } else if let pause, let pausedUntil {
            "paused until \(Timestamp(pausedUntil).rfc3339): \(pause.cause.rawValue) (\(pause.reason))"
        } else if let lastFailure {
            "retrying after \(lastFailure.reason)"
        } else {
            "remote accepting"
        }
    }
}

extension Shipper {
    /// One endpoint of `upload.url`: what it was sent, and whether delivery moved away from it.
    public struct EndpointStatistics: Sendable {
        /// Its URL.
        public var name: String
        /// Counts of the requests it was sent since start.
        public var totals: DeliveryCounts
        /// Set while delivery has moved away from it after a failure: the failure, and its cause.
        public var rest: DeliveryPause?
        /// When its rest ends and a request may probe it, on the wall clock.
        public var restsUntil: Date?
    }
}
