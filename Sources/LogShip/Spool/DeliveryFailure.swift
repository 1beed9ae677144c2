/// Why the remote refused records for good.
public struct DeliveryFailure: Hashable, Sendable {
    /// The HTTP status, when the remote answered.
    public var status: Int?
    /// A one-line reason, with the start of the response body.
    public var reason: String

    public init(status: Int?, reason: String) {
        self.status = status
        self.reason = reason
    }
}
