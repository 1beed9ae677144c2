import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// Where uploads go: the parts of the configured URL a connection and a request need.
struct UploadEndpoint: Sendable {
    /// The host the URL names, as DNS, `Host` and TLS write it (an internationalised name in its `xn--` form): the
    /// request's `Host` and, unless it is an IP address, the TLS server name.
    ///
    /// Read as `encodedHost`: `host` decodes such a name back to Unicode, which no header or handshake takes, and
    /// loads ICU's normalisation data to decode even a plain name (BENCHMARKS.md, Measured choices).
    let host: String
    /// The host to connect to: the URL's, or the one `tls.server_name` moved it to.
    let connectHost: String
    let port: Int
    /// The path and query to request.
    let target: String
    let usesTLS: Bool
    /// The `Host` header: the name, bracketed if an IPv6 address, and the port unless the scheme's own. Made once:
    /// every request sends it.
    let hostHeader: String

    /// - Parameter connectHost: Where to connect instead of the URL's host (with `tls.server_name`).
    init?(url: String, connectHost: String? = nil) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.encodedHost, !host.isEmpty
        else { return nil }
        usesTLS = scheme == "https"
        // URLComponents keeps the brackets of an IPv6 literal; the address is what connects and what TLS checks.
        self.host = Self.unbracketed(host)
        self.connectHost = Self.unbracketed(connectHost ?? host)
        port = components.port ?? (usesTLS ? 443 : 80)
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        target = components.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
        let name = Self.bracketed(self.host)
        hostHeader = port == (usesTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// An IPv6 address in brackets, as URLs and `Host` write it; any other host as it is.
    private static func bracketed(_ host: String) -> String {
        host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
    }

    /// An IPv6 literal without its brackets, its zone (`%25eth0` in a URL) decoded as the resolver takes it
    /// (`%eth0`); any other host as it is.
    private static func unbracketed(_ host: String) -> String {
        guard host.hasPrefix("[") && host.hasSuffix("]") else { return host }
        let address = String(host.dropFirst().dropLast())
        return address.removingPercentEncoding ?? address
    }

    /// `host:port` connected to, as failures name the remote: `127.0.0.1:8514`, `[::1]:443`.
    var remote: String {
        "\(Self.bracketed(connectHost)):\(port)"
    }

    /// The name TLS sends (SNI) and checks the certificate against; `nil` for an IP address, which the
    /// certificate is checked against instead.
    var serverName: String? {
        (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
    }
}
