import NIOSSL

/// The TLS client configuration the `tls.*` keys describe.
enum TLSSettings {
    /// A client configuration: the system's trust store or `tls.ca_file`, a client certificate for mutual TLS,
    /// the minimum version, and (only when explicitly asked) no verification.
    ///
    /// - Throws: ``ConfigurationError`` naming the key whose file cannot be read or parsed.
    static func clientConfiguration(_ tls: DaemonConfiguration.TLS) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = tls.minVersion == "1.3" ? .tlsv13 : .tlsv12
        if !tls.caFile.isEmpty {
            configuration.trustRoots = .certificates(
                try read("tls.ca_file", tls.caFile) { try NIOSSLCertificate.fromPEMFile($0) })
        }
        if !tls.clientCert.isEmpty {
            configuration.certificateChain = try read("tls.client_cert", tls.clientCert) {
                try NIOSSLCertificate.fromPEMFile($0).map { .certificate($0) }
            }
            configuration.privateKey = .privateKey(
                try read("tls.client_key", tls.clientKey) { try NIOSSLPrivateKey(file: $0, format: .pem) })
        }
        if tls.insecureSkipVerify {
            configuration.certificateVerification = .none
        }
        return configuration
    }

    /// Where trust comes from, for log lines about a failed handshake.
    static func trustDescription(_ tls: DaemonConfiguration.TLS) -> String {
        if tls.insecureSkipVerify { return "nothing: tls.insecure_skip_verify is on" }
        return tls.caFile.isEmpty ? "the system trust store" : "tls.ca_file \(tls.caFile)"
    }

    private static func read<Value>(_ key: String, _ path: String, _ body: (String) throws -> Value) throws -> Value {
        do {
            return try body(path)
        } catch {
            throw ConfigurationError("\(key): cannot read \(path): \(error)")
        }
    }
}
