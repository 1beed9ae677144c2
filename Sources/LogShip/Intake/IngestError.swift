/// Errors from setting up the daemon's sockets.
public struct IngestError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case socketPath
        case socketCall
    }

    private let code: Code
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// A socket path cannot be used.
    public static func socketPath(_ path: String, _ problem: String) -> IngestError {
        IngestError(.socketPath, "socket \(path) \(problem)")
    }

    /// A system call on a socket failed.
    public static func socketCall(_ call: String, path: String, _ reason: String) -> IngestError {
        IngestError(.socketCall, "\(call) on \(path) failed: \(reason)")
    }
}
