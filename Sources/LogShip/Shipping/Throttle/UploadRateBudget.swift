/// What the link may carry (`upload.rate.*`): request body bytes and requests per second, how much of it may go
/// at once, and which classes never wait for it.
public struct UploadRateBudget: Hashable, Sendable {
    /// Request body bytes per second as sent, after compression (`upload.rate.bytes_per_second`); `nil` is no
    /// byte budget.
    public var bytesPerSecond: Int?
    /// Requests per second (`upload.rate.requests_per_second`); `nil` is no request budget.
    public var requestsPerSecond: Double?
    /// How many seconds of the budget may be spent at once after a quiet spell (`upload.rate.burst_seconds`).
    public var burstSeconds: Double
    /// The least rate a receiver's overload brings the sending down to (`upload.rate.min_bytes_per_second`);
    /// refused at it, delivery pauses as for any unavailable remote.
    public var minimumBytesPerSecond: Int
    /// Classes sent without waiting for the budget; what they send is still spent from it
    /// (`upload.rate.exempt`).
    public var exempt: Set<PriorityClass>

    public init(
        bytesPerSecond: Int? = nil, requestsPerSecond: Double? = nil, burstSeconds: Double = 1,
        minimumBytesPerSecond: Int = 16 << 10, exempt: Set<PriorityClass> = [.crash]
    ) {
        precondition(burstSeconds > 0 && minimumBytesPerSecond > 0)
        self.bytesPerSecond = bytesPerSecond
        self.requestsPerSecond = requestsPerSecond
        self.burstSeconds = burstSeconds
        self.minimumBytesPerSecond = minimumBytesPerSecond
        self.exempt = exempt
    }
}
