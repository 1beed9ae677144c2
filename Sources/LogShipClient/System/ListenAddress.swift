/// A `host:port` to listen on (`metrics.listen`, `logctl receive --listen`): a numeric IPv4 host, an IPv6 one in
/// brackets (`[::1]:9464`), or a host name (`localhost:8514`).
public struct ListenAddress: Hashable, Sendable {
    public var host: String
    public var port: Int

    /// Parses `text`; nil when it is not `host:port` with a port from 0 to 65 535 and one of the hosts above.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard host.contains(":") else { return nil }
        } else if host.allSatisfy({ $0.isNumber || $0 == "." }) {
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) else { return nil }
        } else {
            // A name: letters, digits, dots and hyphens, as DNS and /etc/hosts have them.
            let isNameCharacter = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "-") }
            guard !host.isEmpty, host.allSatisfy(isNameCharacter) else { return nil }
        }
        self.host = host
        self.port = port
    }
}
