import Foundation

/// A blocking Unix socket client for tests: the peer whose credentials the daemon should report.
public final class UnixClient: @unchecked Sendable {
    // @unchecked: the descriptor is only used by one test at a time.
    public enum SocketType {
        case stream
        case datagram

        public var rawValue: Int32 {
            switch self {
            case .stream: Int32(SOCK_STREAM.rawValue)
            case .datagram: Int32(SOCK_DGRAM.rawValue)
            }
        }
    }

    public let descriptor: Int32

    /// Connects to `path`.
    ///
    /// - Parameter waitingForRoom: Whether a stream connect waits while the listener's queue is full, as a
    ///   blocking socket does; without, it fails at once with EAGAIN, as clients with non-blocking sockets see.
    public init(path: String, type: SocketType, waitingForRoom: Bool = true) throws {
        // Set only once connected: a class whose stored properties are all set runs its deinit even when its
        // init throws, and a deinit closing a descriptor the failed init had closed already closed whatever
        // socket of this process had taken the number since (a listener of another test, a daemon's connection).
        descriptor = try Self.connect(path, type: type, waitingForRoom: waitingForRoom)
    }

    private static func connect(_ path: String, type: SocketType, waitingForRoom: Bool) throws -> Int32 {
        let flags = waitingForRoom ? 0 : Int32(SOCK_NONBLOCK.rawValue)
        let descriptor = socket(AF_UNIX, type.rawValue | Int32(SOCK_CLOEXEC.rawValue) | flags, 0)
        guard descriptor >= 0 else { throw UnixClientError(call: "socket", errno: errno) }
        guard withUnixAddress(path, { Glibc.connect(descriptor, $0, $1) }) == 0 else {
            let code = errno
            close(descriptor)
            throw UnixClientError(call: "connect \(path)", errno: code)
        }
        if !waitingForRoom {
            // A Unix stream connect completes or fails at once; the writes that follow block as usual.
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        }
        return descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Writes all of `bytes` (one datagram on a datagram socket).
    public func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw UnixClientError(call: "send", errno: errno)
            }
            offset += written
        }
    }

    public func write(_ text: String) throws {
        try write(Array(text.utf8))
    }

    /// Makes a blocked send give up after `timeout` (with EAGAIN), so a writer cannot hang on a stopped reader.
    /// Reads and drops what the peer has sent so far, without waiting; returns how many bytes that was.
    @discardableResult
    public func drain() -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while case let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)), count > 0 {
            total += count
        }
        return total
    }

    public func setSendTimeout(_ timeout: Duration) {
        var value = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// How many of `clients` the peer has closed, looking without waiting: a closed connection polls readable
    /// and reads end of file, one the peer keeps open and silent does not.
    public static func closedByPeer(_ clients: [UnixClient]) -> Int {
        var descriptors = clients.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        guard poll(&descriptors, nfds_t(descriptors.count), 0) > 0 else { return 0 }
        var byte: UInt8 = 0
        return descriptors.filter { descriptor in
            descriptor.revents != 0 && recv(descriptor.fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK)) <= 0
        }.count
    }
}

public struct UnixClientError: Error, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// A close-on-exec Unix socket of `type` bound to `path`.
///
/// - Throws: ``UnixClientError`` when it cannot be made or bound.
func bindUnixSocket(_ path: String, type: Int32) throws -> Int32 {
    let descriptor = socket(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw UnixClientError(call: "socket", errno: errno) }
    guard withUnixAddress(path, { bind(descriptor, $0, $1) }) == 0 else {
        let code = errno
        close(descriptor)
        throw UnixClientError(call: "bind \(path)", errno: code)
    }
    return descriptor
}

/// Calls `body` with a `sockaddr_un` for `path` and its length.
private func withUnixAddress<Result>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8.prefix($0.count - 1)) + [0]) }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}
