/// What delivery did, as counts that add up: of one request in a ``RequestReport``, or since start in the
/// shipper's statistics.
///
/// Records and requests are counted apart. Every failed request is either retried or rejected, never both:
/// `failedRequests == retriedRequests + rejectedRequests`. A request cancelled at shutdown is sent but neither.
public struct DeliveryCounts: Hashable, Sendable {
    /// Records the remote accepted.
    public var delivered = 0
    /// Records moved to the dead-letter table.
    public var deadLettered = 0
    /// Requests sent.
    public var requests = 0
    /// Requests the remote did not accept: no answer (refused, reset, TLS, timeout) or a status outside 2xx.
    public var failedRequests = 0
    /// Failed requests that were not the records' fault (no answer, 408, 429, 5xx, a refused endpoint or
    /// credentials): their records went back to the spool whole, to be sent again after a pause.
    public var retriedRequests = 0
    /// Failed requests the remote refused for the records they held (400, 413, 415, 422, another 4xx while it
    /// took other parts of the batch): their records were sent again at once in parts, and a lone refused
    /// record was dead-lettered.
    public var rejectedRequests = 0

    public init() {}

    public static func += (lhs: inout Self, rhs: Self) {
        lhs.delivered += rhs.delivered
        lhs.deadLettered += rhs.deadLettered
        lhs.requests += rhs.requests
        lhs.failedRequests += rhs.failedRequests
        lhs.retriedRequests += rhs.retriedRequests
        lhs.rejectedRequests += rhs.rejectedRequests
    }
}
