/// One endpoint of `upload.url` in `logctl status`: whether delivery goes to it, whether it failed, and what it
/// was sent.
public struct EndpointStatus: Codable, Hashable, Sendable {
    /// Its URL.
    public var url: String
    /// Whether delivery goes to it now.
    public var active = false
    /// Set while delivery has moved away from it after a failure: when its rest ends and a request may probe it
    /// (RFC 3339), and the failure in one line.
    public var restsUntil: String?
    public var failure: String?
    /// Records it accepted, requests it was sent, and of those the ones it did not accept, since start.
    public var delivered = 0
    public var requests = 0
    public var failedRequests = 0

    public init(url: String) {
        self.url = url
    }
}
