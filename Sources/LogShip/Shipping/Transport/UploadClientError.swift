/// Why ``UploadClient`` could not complete an exchange, besides the errors of the connection itself (refused,
/// reset, TLS), which it passes on as they are.
enum UploadClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The connection ended before the response did.
    case connectionClosed(responseStarted: Bool)
    /// No connection within the timeout.
    case timedOutConnecting
    /// No complete response within the timeout on a connection; `status` is the response's, if its head had arrived.
    case timedOut(status: Int?)
    /// The client was shut down.
    case shutDown

    var description: String {
        switch self {
        case .connectionClosed(let started):
            started ? "the connection closed in the middle of the response" : "the connection closed before a response"
        case .timedOutConnecting: "timed out connecting"
        case .timedOut: "request timed out"
        case .shutDown: "the upload client is shut down"
        }
    }
}
