#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A blocking client for the control socket, as `logctl` uses it: connect, send a request line, read the answer.
///
/// The daemon closes a control connection whose requests are all answered once it stays quiet too long
/// (`ingest.control_idle_timeout`); a client that waited between requests (`tail -f | logctl send`) finds that out
/// before its next request and connects again.
public final class ControlClient {
    private let path: String
    private var descriptor: Int32
    private var pending: [UInt8] = []

    /// Connects to the daemon's control socket.
    ///
    /// - Throws: ``ControlClientError`` saying why the daemon cannot be reached.
    public init(path: String) throws {
        self.path = path
        descriptor = try Self.connect(path)
    }

    deinit {
        close(descriptor)
    }

    private static func connect(_ path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ControlClientError.unreachable(path, errno: errno) }
        let connected = withUnixAddress(path) { Glibc.connect(descriptor, $0, $1) }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw ControlClientError.unreachable(path, errno: code)
        }
        return descriptor
    }

    /// Whether the daemon has closed this connection while it was quiet: between requests nothing else is ever
    /// readable.
    private var isClosedByDaemon: Bool {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        return poll(&descriptors, 1, 0) > 0 && descriptors[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
    }

    /// Sends one request and waits for its response.
    ///
    /// - Throws: ``ControlClientError`` if the connection breaks or the answer is not a response.
    public func send(_ request: ControlRequest) throws -> ControlResponse {
        if pending.isEmpty && isClosedByDaemon {
            close(descriptor)
            descriptor = try Self.connect(path)
        }
        var line = try JSONEncoder().encode(request)
        line.append(UInt8(ascii: "\n"))
        try line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw ControlClientError.connectionLost(path, errno: errno)
                }
                offset += written
            }
        }
        let responseLine = try readLine()
        do {
            return try JSONDecoder().decode(ControlResponse.self, from: Data(responseLine))
        } catch {
            throw ControlClientError.malformedResponse(String(decoding: responseLine.prefix(200), as: UTF8.self))
        }
    }

    private func readLine() throws -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                return line
            }
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw ControlClientError.connectionLost(path, errno: count == 0 ? 0 : errno) }
            pending.append(contentsOf: chunk[..<count])
        }
    }
}

/// Why `logctl` could not talk to the daemon; the description is the one line `logctl` prints.
public struct ControlClientError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    private init(_ description: String) {
        self.description = description
    }

    static func unreachable(_ path: String, errno code: Int32) -> ControlClientError {
        switch code {
        case ENOENT, ECONNREFUSED:
            ControlClientError("logshipd is not running (no daemon listening at \(path))")
        case EACCES, EPERM:
            ControlClientError("permission denied on \(path) (is your user in the socket's group?)")
        default:
            ControlClientError("cannot connect to \(path): \(SystemError.describe(code))")
        }
    }

    static func connectionLost(_ path: String, errno code: Int32) -> ControlClientError {
        code == 0
            ? ControlClientError("logshipd closed the connection at \(path) before answering")
            : ControlClientError("connection to \(path) failed: \(SystemError.describe(code))")
    }

    static func malformedResponse(_ excerpt: String) -> ControlClientError {
        ControlClientError("logshipd sent an unreadable response: \(excerpt)")
    }
}
