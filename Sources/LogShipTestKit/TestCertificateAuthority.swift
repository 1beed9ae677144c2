import Foundation

/// A certificate authority made with openssl(1) for TLS tests, and the certificates it issues: P-256 keys, valid
/// for two days, PEM files in one directory.
public struct TestCertificateAuthority: Sendable {
    /// What an issued certificate is for.
    public enum Usage: Sendable {
        /// A server on 127.0.0.1 and localhost.
        case server
        /// A server known only by this DNS name.
        case serverNamed(String)
        /// A client, for mutual TLS.
        case client
    }

    /// A certificate and its private key.
    public struct Issued: Sendable {
        public var certificate: String
        public var key: String
    }

    public let directory: String
    public let name: String

    /// The CA's certificate: what a peer trusts.
    public var certificate: String { "\(directory)/\(name).pem" }
    private var key: String { "\(directory)/\(name).key" }

    /// Makes a self-signed CA named `name` in `directory`.
    public init(directory: String, name: String) async throws {
        self.directory = directory
        self.name = name
        try await Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=\(name)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
    }

    /// Issues a certificate named `name` for `usage`.
    public func issue(_ name: String, for usage: Usage) async throws -> Issued {
        let issued = Issued(certificate: "\(directory)/\(name).pem", key: "\(directory)/\(name).key")
        let extensions = switch usage {
        case .server: ["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-addext", "extendedKeyUsage=serverAuth"]
        case .serverNamed(let name): ["-addext", "subjectAltName=DNS:\(name)", "-addext", "extendedKeyUsage=serverAuth"]
        case .client: ["-addext", "extendedKeyUsage=clientAuth"]
        }
        try await Self.openssl([
            "req", "-x509", "-CA", certificate, "-CAkey", key, "-newkey", "ec",
            "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", issued.key, "-out", issued.certificate, "-days", "2", "-subj", "/CN=\(name)",
            "-addext", "basicConstraints=critical,CA:FALSE",
        ] + extensions)
        return issued
    }

    private static func openssl(_ arguments: [String]) async throws {
        let result = try await run("/usr/bin/openssl", arguments)
        guard result.status == 0 else { throw CommandFailed("openssl \(arguments.first ?? "")", result) }
    }
}
