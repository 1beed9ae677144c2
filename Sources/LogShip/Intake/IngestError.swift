/// Errors from setting up the daemon's sockets.
public struct IngestError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case socketPath
        case socketCall
        case outOfDescriptors
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

    /// Accepting a connection failed for want of a file descriptor (the process's or the system's).
    public static func outOfDescriptors(path: String, _ reason: String) -> IngestError {
        IngestError(.outOfDescriptors, "accept on \(path) failed: \(reason)")
    }

    /// Whether this is ``outOfDescriptors(path:_:)``.
    var isOutOfDescriptors: Bool { code == .outOfDescriptors }

    /// A system call on a socket failed.
    public static func socketCall(_ call: String, path: String, _ reason: String) -> IngestError {
        IngestError(.socketCall, "\(call) on \(path) failed: \(reason)")
    }
}
