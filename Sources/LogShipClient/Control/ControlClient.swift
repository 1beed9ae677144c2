#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A blocking client for the control socket, as `logctl` uses it: connect, send a request line, read the answer.
///
/// The daemon closes a control connection whose requests are all answered once it stays quiet too long
/// (`ingest.control_idle_timeout`); a client that waited between requests (`tail -f | logctl send`) finds that out
/// before its next request and connects again. Should the daemon close it just as the request goes, the request
/// was not read (the daemon closes only connections with nothing unanswered), and it goes again on a new one.
public final class ControlClient {
    private let path: String
    private let greetingTimeout: Duration
    /// -1 while not connected (a new connection failed).
    private var descriptor: Int32
    private var pending: [UInt8] = []
    /// When the last response arrived; `nil` before the first, on a connection that is new.
    private var lastAnswer: ContinuousClock.Instant?

    /// Connects to the daemon's control socket and reads its greeting.
    ///
    /// - Parameter greetingTimeout: How long to wait for the greeting before asking the kernel why none came: a
    ///   stopped daemon, one that has not accepted the connection, or a socket that is not the control socket.
    /// - Throws: ``ControlClientError`` saying why the daemon cannot be reached.
    public init(path: String, greetingTimeout: Duration = ControlProtocol.greetingTimeout) throws {
        self.path = path
        self.greetingTimeout = greetingTimeout
        (descriptor, pending) = try Self.connect(path, greetingTimeout: greetingTimeout)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    private func reconnect() throws {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        pending = []
        lastAnswer = nil
        (descriptor, pending) = try Self.connect(path, greetingTimeout: greetingTimeout)
    }

    /// Connects and reads the daemon's greeting, so that nothing is sent to a socket that is not logshipd's
    /// control socket.
    private static func connect(
        _ path: String, greetingTimeout: Duration
    ) throws -> (descriptor: Int32, pending: [UInt8]) {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ControlClientError.unreachable(path, errno: errno) }
        let connected = withUnixAddress(path) { Glibc.connect(descriptor, $0, $1) }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw ControlClientError.unreachable(path, errno: code)
        }
        do {
            var pending: [UInt8] = []
            let line = try readLine(from: descriptor, path: path, pending: &pending, within: greetingTimeout)
            guard line.elementsEqual(ControlProtocol.greeting.utf8) else {
                if let reason = ControlProtocol.refusalReason(line) { throw ControlClientError.refused(path, reason) }
                throw ControlClientError.notControlSocket(path, String(decoding: line.prefix(80), as: UTF8.self))
            }
            return (descriptor, pending)
        } catch {
            close(descriptor)
            throw error
        }
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
        if descriptor < 0 || (pending.isEmpty && isClosedByDaemon) { try reconnect() }
        var line = try JSONEncoder().encode(request)
        line.append(UInt8(ascii: "\n"))
        // The shortest idle timeout the daemon takes (`ingest.control_idle_timeout`): a connection answered more
        // recently cannot have been closed for being quiet.
        let mayHaveTimedOut = lastAnswer.map { ContinuousClock.now - $0 >= .milliseconds(100) } ?? false
        do {
            return try exchange(line)
        } catch let error as ControlClientError
            where mayHaveTimedOut && error.isClosedBeforeAnswering && pending.isEmpty {
            try reconnect()
            return try exchange(line)
        }
    }

    /// Writes a request line and reads its response.
    private func exchange(_ line: Data) throws -> ControlResponse {
        try line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                // MSG_NOSIGNAL: a connection the daemon closed is an error to report, not a SIGPIPE.
                let written = Glibc.send(
                    descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw ControlClientError.connectionLost(path, errno: errno)
                }
                offset += written
            }
        }
        let responseLine = try readLine()
        lastAnswer = .now
        do {
            return try JSONDecoder().decode(ControlResponse.self, from: Data(responseLine))
        } catch {
            throw ControlClientError.malformedResponse(String(decoding: responseLine.prefix(200), as: UTF8.self))
        }
    }

    private func readLine() throws -> [UInt8] {
        try Self.readLine(from: descriptor, path: path, pending: &pending, within: nil)
    }

    /// Reads one line, keeping what follows it in `pending`; within `timeout`, if one is given.
    private static func readLine(
        from descriptor: Int32, path: String, pending: inout [UInt8], within timeout: Duration?
    ) throws -> [UInt8] {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                return line
            }
            if let deadline {
                let left = deadline - .now
                var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
                let milliseconds = max(
                    0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
                let ready = poll(&descriptors, 1, Int32(clamping: milliseconds))
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 { throw ControlClientError.connectionLost(path, errno: errno) }
                guard ready > 0 else {
                    throw ControlClientError.silent(path, waited: timeout ?? .zero, SilentPeer.diagnose(descriptor))
                }
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
    /// Whether the daemon closed the connection before any answer came: at end of file, or on a write that found
    /// it closed.
    let isClosedBeforeAnswering: Bool

    private init(_ description: String, isClosedBeforeAnswering: Bool = false) {
        self.description = description
        self.isClosedBeforeAnswering = isClosedBeforeAnswering
    }

    static func unreachable(_ path: String, errno code: Int32) -> ControlClientError {
        switch code {
        case ENOENT, ECONNREFUSED:
            ControlClientError("logshipd is not running (no daemon listening at \(path))")
        case EACCES, EPERM:
            ControlClientError("permission denied on \(path) (is your user in the socket's group?)")
        case EPROTOTYPE, ENOTSOCK:
            ControlClientError(
                "\(path) is not logshipd's control socket "
                    + "(\(code == EPROTOTYPE ? "a datagram socket, such as the ingest one" : "not a socket")). "
                    + "\(controlSocketHint)")
        default:
            ControlClientError("cannot connect to \(path): \(SystemError.describe(code))")
        }
    }

    static func connectionLost(_ path: String, errno code: Int32) -> ControlClientError {
        code == 0
            ? ControlClientError(
                "logshipd closed the connection at \(path) before answering", isClosedBeforeAnswering: true)
            : ControlClientError(
                "connection to \(path) failed: \(SystemError.describe(code))",
                isClosedBeforeAnswering: code == EPIPE || code == ECONNRESET)
    }

    /// Something at `path` accepted the connection but did not greet as logshipd's control socket does: it sent
    /// `answer`.
    static func notControlSocket(_ path: String, _ answer: String) -> ControlClientError {
        ControlClientError(
            "\(path) is not logshipd's control socket (it answered \"\(answer)\"); nothing was sent. "
                + controlSocketHint)
    }

    /// No greeting came from `path` within `waited`; `peer` is what the kernel tells of why.
    static func silent(_ path: String, waited: Duration, _ peer: SilentPeer) -> ControlClientError {
        let within = ConfigurationText.duration(waited)
        switch peer {
        case .stopped(let pid, let name):
            return ControlClientError(
                "\(name ?? "the process") (pid \(pid)) is stopped, so \(path) cannot answer until it continues "
                    + "(kill -CONT \(pid)); nothing was sent")
        case .notAccepted:
            return ControlClientError(
                "\(path) did not answer within \(within): the connection waits to be accepted (logshipd busy, still "
                    + "starting, or out of file descriptors); nothing was sent")
        case .acceptedSilently:
            return ControlClientError(
                "\(path) is not logshipd's control socket (it took the connection and sent no greeting within "
                    + "\(within): an ingest socket, or another program's); nothing was sent. \(controlSocketHint)")
        case .unknown:
            return ControlClientError(
                "\(path) sent no greeting within \(within): logshipd did not answer in time, or this is not its "
                    + "control socket; nothing was sent. \(controlSocketHint)")
        }
    }

    private static let controlSocketHint =
        "logctl talks to the control socket: ingest.control in the configuration, /run/logshipd/control.sock by default"

    /// The daemon would not serve the connection, and said why.
    static func refused(_ path: String, _ reason: String) -> ControlClientError {
        ControlClientError("logshipd at \(path) refused the connection: \(reason)")
    }

    static func malformedResponse(_ excerpt: String) -> ControlClientError {
        ControlClientError("logshipd sent an unreadable response: \(excerpt)")
    }
}
