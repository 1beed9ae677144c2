import Foundation
import NIOSSL

/// A failed TLS exchange in an operator's words: what went wrong, with whom, and which `tls.*` key it concerns.
///
/// NIOSSL reports a failure as `NIOSSLError`, `BoringSSLError` (a server's alert arrives as one, in TLS 1.3 after
/// the client's side of the handshake ended) or `NIOSSLExtraError` (a certificate for another name), each
/// describing BoringSSL's error stack; the reason at its top (`CERTIFICATE_VERIFY_FAILED`,
/// `TLSV1_ALERT_UNKNOWN_CA`, …) is what tells the cases apart.
struct TLSFailure: Sendable {
    /// What logshipd's side of the handshake was set up with, for the words.
    struct Settings: Sendable {
        /// Where trust comes from: `tls.ca_file /etc/logshipd/ca.pem`, or `the system trust store`.
        var trust: String
        /// Whether `tls.client_cert` is set.
        var hasClientCertificate: Bool
        /// `tls.min_version`: `1.2` or `1.3`.
        var minimumVersion: String
    }

    private enum Kind: Equatable {
        case untrustedCertificate
        case certificateForAnotherName
        case clientCertificateRequired
        /// The remote's alert about the client certificate, in words (`its CA is unknown there`).
        case clientCertificateRefused(String)
        case refusedHandshake
        case noCommonVersion
        case notTLS
        case closedDuringHandshake
        /// Closed without TLS's own goodbye (close_notify), at any point of the exchange.
        case closedAbruptly
        /// Anything else, with BoringSSL's reason in lower case.
        case other(String)
    }

    private let kind: Kind

    /// The failure `error` describes, or `nil` when it is not NIOSSL's.
    init?(_ error: any Error) {
        switch error {
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            kind = .certificateForAnotherName
        case let error as NIOSSLExtraError:
            kind = .other("\(error)")
        case NIOSSLError.handshakeFailed(let error):
            kind = Self.kind(of: error)
        case NIOSSLError.uncleanShutdown:
            kind = .closedAbruptly
        case let error as NIOSSLError:
            kind = .other("\(error)")
        case let error as BoringSSLError:
            kind = Self.kind(of: error)
        default:
            return nil
        }
    }

    /// The failure in one line.
    ///
    /// - Parameters:
    ///   - remote: `host:port` connected to.
    ///   - serverName: The name the certificate was checked against.
    func description(remote: String, serverName: String, settings: Settings) -> String {
        switch kind {
        case .untrustedCertificate:
            "TLS certificate of \(remote) not trusted by \(settings.trust) (issued by another CA, or expired)"
        case .certificateForAnotherName:
            "TLS certificate of \(remote) is not for \(serverName) (tls.server_name sets the name to check)"
        case .clientCertificateRequired where settings.hasClientCertificate:
            "\(remote) refused logshipd's client certificate (tls.client_cert)"
        case .clientCertificateRequired:
            "\(remote) requires a client certificate: set tls.client_cert and tls.client_key"
        case .clientCertificateRefused(let why):
            "\(remote) refused logshipd's client certificate (tls.client_cert): \(why)"
        case .refusedHandshake where settings.hasClientCertificate:
            "TLS handshake failed: \(remote) refused it"
        case .refusedHandshake:
            "TLS handshake failed: \(remote) refused it (does it require a client certificate? tls.client_cert)"
        case .noCommonVersion:
            "TLS handshake failed: \(remote) and logshipd have no TLS version in common "
                + "(tls.min_version is \(settings.minimumVersion))"
        case .notTLS:
            "TLS handshake failed: \(remote) does not speak TLS (is the URL's https:// meant to be http://?)"
        case .closedDuringHandshake:
            "TLS handshake failed: \(remote) closed the connection"
        case .closedAbruptly:
            "\(remote) closed the TLS connection abruptly"
        case .other(let reason):
            "TLS with \(remote) failed: \(reason)"
        }
    }

    private static func kind(of error: BoringSSLError) -> Kind {
        guard case .sslError(let stack) = error, let top = stack.first else { return .other("\(error)") }
        if top == .eofDuringHandshake { return .closedDuringHandshake }
        guard let reason = "\(top)".firstMatch(of: /:([A-Z0-9_]+)\s+at\s/)?.output.1 else { return .other("\(top)") }
        switch reason {
        case "CERTIFICATE_VERIFY_FAILED": return .untrustedCertificate
        case "TLSV1_ALERT_CERTIFICATE_REQUIRED": return .clientCertificateRequired
        case "TLSV1_ALERT_UNKNOWN_CA": return .clientCertificateRefused("its CA is unknown there")
        case "SSLV3_ALERT_CERTIFICATE_EXPIRED": return .clientCertificateRefused("expired")
        case "SSLV3_ALERT_CERTIFICATE_REVOKED": return .clientCertificateRefused("revoked")
        case "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
            "TLSV1_ALERT_ACCESS_DENIED":
            return .clientCertificateRefused(Self.words(reason))
        case "SSLV3_ALERT_HANDSHAKE_FAILURE": return .refusedHandshake
        case "TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL": return .noCommonVersion
        case "WRONG_VERSION_NUMBER": return .notTLS
        default: return .other(Self.words(reason))
        }
    }

    /// `SSLV3_ALERT_BAD_CERTIFICATE` as `alert: bad certificate`.
    private static func words(_ reason: Substring) -> String {
        var words = reason.lowercased().replacingOccurrences(of: "_", with: " ")
        for prefix in ["sslv3 alert ", "tlsv1 alert "] where words.hasPrefix(prefix) {
            words = "alert: " + words.dropFirst(prefix.count)
        }
        return words
    }
}
