import NIOCore

/// A TCP address that could not be listened on, in words that name it: `cannot listen on 127.0.0.1:8514: address
/// already in use`, where SwiftNIO's own error reads `bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`.
public struct ListenError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The address as `host:port`, an IPv6 host in brackets.
    public let address: String
    /// Why, in the system's words.
    public let reason: String
    /// The system's error number, when binding failed with one (`EADDRINUSE`, `EACCES`).
    public let errnoCode: Int32?

    /// Describes what binding `host:port` threw.
    public init(host: String, port: Int, underlying: any Error) {
        address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        errnoCode = (underlying as? IOError)?.errnoCode
        let text = errnoCode.map(SystemError.describe) ?? "\(underlying)"
        reason = text.prefix(1).lowercased() + text.dropFirst()
    }

    public var description: String { "cannot listen on \(address): \(reason)" }
}
