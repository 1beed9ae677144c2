import Testing

@testable import LogShip

@Suite("Upload endpoints")
struct UploadEndpointTests {
    @Test("a URL gives the host to connect to, the Host header, the TLS name and the request target")
    func parts() throws {
        let plain = try #require(UploadEndpoint(url: "http://logs.example:8514/ingest?tenant=a"))
        #expect(plain.connectHost == "logs.example" && plain.port == 8514 && !plain.usesTLS)
        #expect(plain.hostHeader == "logs.example:8514" && plain.target == "/ingest?tenant=a")
        #expect(plain.serverName == "logs.example")

        let secure = try #require(UploadEndpoint(url: "https://logs.example"))
        #expect(secure.port == 443 && secure.usesTLS && secure.hostHeader == "logs.example" && secure.target == "/")

        let moved = try #require(UploadEndpoint(url: "https://logs.internal/ingest", connectHost: "10.0.0.2"))
        #expect(
            moved.connectHost == "10.0.0.2" && moved.serverName == "logs.internal"
                && moved.hostHeader == "logs.internal")
    }

    @Test("""
        an IPv4 or IPv6 literal connects as an address, is checked as an address, and is bracketed only in the Host \
        header
        """)
    func addresses() throws {
        let six = try #require(UploadEndpoint(url: "https://[2001:db8::1]:8443/ingest"))
        #expect(six.connectHost == "2001:db8::1" && six.host == "2001:db8::1")
        #expect(six.hostHeader == "[2001:db8::1]:8443")
        #expect(six.serverName == nil, "an address is not sent as a TLS server name")

        let zoned = try #require(UploadEndpoint(url: "http://[fe80::1%25eth0]:8514/"))
        #expect(zoned.connectHost == "fe80::1%eth0", "a link-local address's zone, as the resolver takes it")

        let four = try #require(UploadEndpoint(url: "http://127.0.0.1/"))
        #expect(four.connectHost == "127.0.0.1" && four.hostHeader == "127.0.0.1" && four.serverName == nil)
    }

    @Test("an internationalised host name is connected to, sent and checked in its ASCII form")
    func internationalisedName() throws {
        for url in ["https://bücher.example:8443/ingest", "https://xn--bcher-kva.example:8443/ingest"] {
            let endpoint = try #require(UploadEndpoint(url: url))
            #expect(endpoint.connectHost == "xn--bcher-kva.example", "\(url)")
            #expect(endpoint.hostHeader == "xn--bcher-kva.example:8443")
            #expect(endpoint.serverName == "xn--bcher-kva.example")
        }
    }

    @Test(
        "anything but an http(s) URL with a host is refused",
        arguments: ["ftp://x/", "http:///path", "logs.example", ""])
    func refused(url: String) {
        #expect(UploadEndpoint(url: url) == nil)
    }
}
