import Foundation

/// Why an upload failed, and whether trying again can help.
public struct UploadError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case status(Int)
        case transport(String)
        case timeout
    }

    private let code: Code
    /// The first bytes of the response body, for logs and dead letters.
    public let responseExcerpt: String
    /// The delay the remote asked for with `Retry-After`, if any.
    public let retryAfter: Date?

    private init(_ code: Code, responseExcerpt: String = "", retryAfter: Date? = nil) {
        self.code = code
        self.responseExcerpt = responseExcerpt
        self.retryAfter = retryAfter
    }

    /// The remote answered with a status outside 2xx.
    public static func status(_ status: Int, responseExcerpt: String, retryAfter: Date? = nil) -> UploadError {
        UploadError(.status(status), responseExcerpt: responseExcerpt, retryAfter: retryAfter)
    }

    /// The request did not complete: connection refused, reset, DNS, TLS.
    public static func transport(_ reason: String) -> UploadError { UploadError(.transport(reason)) }

    /// No response within the request timeout.
    public static let timeout = UploadError(.timeout)

    /// The HTTP status, when the remote answered.
    public var status: Int? {
        if case .status(let status) = code { return status }
        return nil
    }

    /// Transport errors, timeouts, 408, 429 and 5xx may succeed later; other statuses will not.
    public var isRetryable: Bool {
        switch code {
        case .transport, .timeout: true
        case .status(let status): status == 408 || status == 429 || (500...599).contains(status)
        }
    }

    public var description: String {
        switch code {
        case .status(let status):
            responseExcerpt.isEmpty ? "HTTP \(status)" : "HTTP \(status): \(responseExcerpt)"
        case .transport(let reason): "transport error: \(reason)"
        case .timeout: "request timed out"
        }
    }
}
