import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

extension HTTPUploader {
    /// What failures are told with: whom the uploader talks to, for how long, and with what TLS settings.
    struct FailureContext: Sendable {
        let endpoint: UploadEndpoint
        /// `upload.timeout`.
        let timeout: Duration
        let tls: TLSFailure.Settings

        init(endpoint: UploadEndpoint, configuration: Configuration) {
            self.endpoint = endpoint
            timeout = configuration.timeout
            let version = switch configuration.tls?.minimumTLSVersion {
            case .tlsv13: "1.3"
            case .tlsv11: "1.1"
            case .tlsv1: "1.0"
            default: "1.2"
            }
            tls = TLSFailure.Settings(
                trust: configuration.trustDescription,
                hasClientCertificate: !(configuration.tls?.certificateChain.isEmpty ?? true), minimumVersion: version)
        }
    }

    /// Maps what the client threw to an ``UploadError`` in words that name the remote; what the library said goes
    /// along as ``UploadError/detail``, for the debug log. Cancellation stays cancellation.
    static func translate(_ error: any Error, _ context: FailureContext) -> any Error {
        if error is CancellationError { return error }
        let remote = context.endpoint.remote
        let detail = String(describing: error)
        if let failure = TLSFailure(error) {
            let words = failure.description(remote: remote, serverName: context.endpoint.host, settings: context.tls)
            return UploadError.transport(words, detail: detail)
        }
        let after = "timed out after \(ConfigurationText.duration(context.timeout))"
        switch error {
        case UploadClientError.timedOutConnecting, ChannelError.connectTimeout:
            return UploadError.timeout("\(after) connecting to \(remote) (upload.timeout)")
        case UploadClientError.timedOut(let status?):
            return UploadError.timeout(
                "\(after) waiting for the rest of \(remote)'s answer (HTTP \(status); upload.timeout)")
        case UploadClientError.timedOut(nil):
            return UploadError.timeout("\(after) waiting for \(remote) to answer (upload.timeout)")
        case UploadClientError.connectionClosed(let responseStarted):
            let when = responseStarted ? "before the response ended" : "before answering"
            return UploadError.transport("\(remote) closed the connection \(when)", detail: detail)
        case HTTPParserError.invalidEOFState:
            // The parser's word for a connection closed in the middle of a response's head or body.
            return UploadError.transport("\(remote) closed the connection before the response ended", detail: detail)
        case let error as IOError:
            return UploadError.transport(describe(error.errnoCode, remote: remote), detail: detail)
        case let error as NIOConnectionError:
            return UploadError.transport(describe(error, remote: remote), detail: detail)
        case is HTTPParserError:
            return UploadError.transport("\(remote) answered with something that is not HTTP/1.1", detail: detail)
        default:
            return UploadError.transport("upload to \(remote) failed: \(error)", detail: detail)
        }
    }

    /// An error on an open connection in words: `connection reset by 127.0.0.1:8514`.
    private static func describe(_ code: Int32, remote: String) -> String {
        switch code {
        case ECONNRESET, EPIPE: "connection reset by \(remote)"
        default: "connection to \(remote) failed: \(SystemError.describe(code).lowercased())"
        }
    }

    /// A failed connect in words: `cannot connect to 127.0.0.1:8514: connection refused`, or `cannot resolve
    /// logs.example: name or service not known` when no address was found; NIO's description lists its
    /// attempts' internals.
    private static func describe(_ error: NIOConnectionError, remote: String) -> String {
        if let failure = error.connectionErrors.first {
            let reason = (failure.error as? IOError).map { SystemError.describe($0.errnoCode).lowercased() }
                ?? String(describing: failure.error)
            return "cannot connect to \(remote): \(reason)"
        }
        guard let lookup = error.dnsAError ?? error.dnsAAAAError else { return "cannot connect to \(remote)" }
        let reason = (lookup as? SocketAddressError.UnknownHost)?.errorDescription.lowercased()
        return "cannot resolve \(error.host)" + (reason.map { ": \($0)" } ?? "")
    }
}
