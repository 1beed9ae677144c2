import LogShip
import Testing

@Suite("host:port to listen on")
struct ListenAddressTests {
    @Test(
        "IPv4, bracketed IPv6 and host names are read with their port",
        arguments: [
            ("127.0.0.1:9464", "127.0.0.1", 9464), ("[::1]:0", "::1", 0), ("localhost:8514", "localhost", 8514),
            ("log-sink.example:65535", "log-sink.example", 65535),
        ])
    func reads(text: String, host: String, port: Int) {
        let address = ListenAddress(text)
        #expect(address?.host == host)
        #expect(address?.port == port)
    }

    @Test(
        "anything else is refused",
        arguments: [
            "", "9464", ":9464", "127.0.0.1", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.256:80", "1.2.3:80",
            "::1:80", "[127.0.0.1]:80", "host name:80", "hoşt:80", "[::1]:port",
        ])
    func refuses(text: String) {
        #expect(ListenAddress(text) == nil)
    }
}
