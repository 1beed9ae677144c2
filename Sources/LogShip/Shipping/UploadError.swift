import Foundation

/// Why an upload failed, and what that says about the batch.
public struct UploadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What a failure says about the records that were sent, which decides what happens to them.
    public enum Fault: Hashable, Sendable {
        /// The remote could not take anything just now (transport error, timeout, 408, 429, 5xx): try the same
        /// batch again later.
        case remoteUnavailable
        /// The endpoint or the credentials are wrong (3xx, 401, 403, 404, 405, 407, 410, 421, 426): no record is
        /// at fault and splitting cannot help; delivery pauses until the remote accepts again.
        case endpointRefused
        /// The remote refuses something in the records (400, 413, 415, 422), or a spooled line cannot be written
        /// in the upload format: split the batch until the refused records are alone, and dead-letter those.
        case recordsRefused
        /// Any other 4xx: the records are at fault only if the remote takes some parts of the batch and not
        /// others; if it refuses every part, it is treated like ``endpointRefused``.
        case unclear
    }

    private enum Code: Hashable, Sendable {
        case status(Int)
        case transport(String)
        case timeout(String)
        case credentials(String)
        case unencodable(String)
    }

    private let code: Code
    /// The first bytes of the response body, for logs and dead letters.
    public let responseExcerpt: String
    /// The delay the remote asked for with `Retry-After`, in seconds and exactly as asked (it may be absurdly
    /// long: the caller caps it).
    public let retryAfter: TimeInterval?
    /// The library's own account of the failure (NIO's, BoringSSL's error stack), which ``description`` puts in
    /// words: for the log at debug level only.
    public let detail: String?
    /// Where a redirect (3xx) pointed, which logshipd does not follow.
    public let location: String?

    private init(
        _ code: Code, responseExcerpt: String = "", retryAfter: TimeInterval? = nil, detail: String? = nil,
        location: String? = nil
    ) {
        self.code = code
        self.responseExcerpt = responseExcerpt
        self.retryAfter = retryAfter
        self.detail = detail
        self.location = location
    }

    /// The remote answered with a status outside 2xx; `location` is a redirect's `Location`.
    public static func status(
        _ status: Int, responseExcerpt: String, retryAfter: TimeInterval? = nil, location: String? = nil
    ) -> UploadError {
        UploadError(.status(status), responseExcerpt: responseExcerpt, retryAfter: retryAfter, location: location)
    }

    /// The request did not complete (connection refused or reset, a name that does not resolve, TLS), with
    /// `reason` in words that name the remote, and the library's `detail`.
    public static func transport(_ reason: String, detail: String? = nil) -> UploadError {
        UploadError(.transport(reason), detail: detail)
    }

    /// logshipd's own credentials could not be read (the token file): like a refused credential, nothing the
    /// records can help.
    public static func credentials(_ reason: String) -> UploadError { UploadError(.credentials(reason)) }

    /// No complete response within the request timeout; `reason` says how far the exchange had come.
    public static func timeout(_ reason: String) -> UploadError { UploadError(.timeout(reason)) }

    /// The batch could not be written in the upload format (a spooled line that is not a record's line), so
    /// nothing was sent: the records are at fault, as if the remote had refused them.
    public static func unencodable(_ reason: String) -> UploadError { UploadError(.unencodable(reason)) }

    /// The HTTP status, when the remote answered.
    public var status: Int? {
        if case .status(let status) = code { return status }
        return nil
    }

    /// Whether the batch could not be written in the upload format, so that nothing was sent.
    public var isUnencodable: Bool {
        if case .unencodable = code { return true }
        return false
    }

    /// Whether the remote said it is overloaded (429 or 503): busy rather than down, so a lower rate may do.
    public var isOverload: Bool { status == 429 || status == 503 }

    public var fault: Fault {
        switch code {
        case .transport, .timeout:
            return .remoteUnavailable
        case .credentials:
            return .endpointRefused
        case .unencodable:
            return .recordsRefused
        case .status(let status):
            switch status {
            case 408, 429, 500...599: return .remoteUnavailable
            case 300...399, 401, 403, 404, 405, 407, 410, 421, 426: return .endpointRefused
            case 400, 413, 415, 422: return .recordsRefused
            default: return .unclear
            }
        }
    }

    /// The failure in one line of words, for status, the log and dead letters: `HTTP 400: bad field`,
    /// `HTTP 301 to https://logs.example/v2 (redirects are not followed: set upload.url)`,
    /// `cannot connect to 127.0.0.1:8514: connection refused`, `timed out after 10s waiting for …`.
    public var description: String {
        switch code {
        case .status(let status):
            (location.map { "HTTP \(status) to \($0) (redirects are not followed: set upload.url)" }
                ?? "HTTP \(status)") + (responseExcerpt.isEmpty ? "" : ": \(responseExcerpt)")
        case .transport(let reason), .timeout(let reason): reason
        case .credentials(let reason): "credentials: \(reason)"
        case .unencodable(let reason): reason
        }
    }
}
