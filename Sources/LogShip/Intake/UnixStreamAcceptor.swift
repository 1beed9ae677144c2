import CUnixSocket
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A listening Unix stream socket whose connections are accepted here, one at a time, with the peer's
/// credentials; an `eventfd` wakes a waiting ``accept()`` when the listener stops.
///
/// The daemon accepts by itself instead of through NIO's server channel, which calls `listen(2)` again on a socket
/// it adopts: on one systemd passed, that cut the queue systemd made (`Backlog=`, SOMAXCONN by default) to 128,
/// and connections made while the daemon restarted were refused. Accepting by itself, the daemon also decides
/// exactly which connections it takes: after ``wake()`` it accepts none, and the ones not yet accepted wait in the
/// kernel for the next daemon. A socket it bound itself has no next daemon: ``stopListening()`` removes its file
/// and ``acceptQueued()`` takes what was already queued, so that no client is left connected to a socket about to
/// close.
final class UnixStreamAcceptor: Sendable {
    /// A connection taken from the queue: its socket, and its sender as the kernel reports it.
    struct Accepted: Sendable {
        var descriptor: Int32
        var peer: PeerCredentials

        /// A connection of the socket at `path` with its peer's credentials, read now; closed when they cannot be.
        ///
        /// - Throws: ``IngestError`` when `SO_PEERCRED` fails.
        init(_ connection: Int32, path: String) throws {
            var credentials = cunixsocket_credentials()
            var length = socklen_t(MemoryLayout<cunixsocket_credentials>.size)
            guard getsockopt(connection, cunixsocket_sol_socket, cunixsocket_so_peercred, &credentials, &length) == 0
            else {
                let code = errno
                Glibc.close(connection)
                throw IngestError.socketCall("getsockopt(SO_PEERCRED)", path: path, SystemError.describe(code))
            }
            descriptor = connection
            // Read comm now: a short-lived client (logger) may be gone by the time its data is read.
            peer = PeerCredentials(credentials)
        }
    }

    let path: String
    /// Whether this socket created its file (and removes it); not when systemd passed the socket.
    let ownsPath: Bool
    private let descriptor: Int32
    private let wakeDescriptor: Int32
    /// Set once the descriptors are closed (no wake may write to a number reused since), and once the file is
    /// removed (it is removed once: another daemon may have bound the path since).
    private let ended = Mutex((isClosed: false, isUnlinked: false))

    /// Binds `path` (replacing a stale socket file), listens, and sets the file's mode.
    ///
    /// - Throws: ``IngestError`` when the path is in use or a call fails.
    static func bind(path: String, mode: mode_t, backlog: Int32) throws -> UnixStreamAcceptor {
        try UnixSocketPath.prepare(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw IngestError.socketCall("socket", path: path, SystemError.describe(errno)) }
        guard withUnixAddress(path, { Glibc.bind(descriptor, $0, $1) }) == 0 else {
            // Not ours to remove: another process may have bound the path since it was prepared.
            let code = errno
            Glibc.close(descriptor)
            throw IngestError.socketCall("bind", path: path, SystemError.describe(code))
        }
        do {
            guard listen(descriptor, backlog) == 0 else {
                throw IngestError.socketCall("listen", path: path, SystemError.describe(errno))
            }
            try UnixSocketPath.setMode(path, mode: mode)
            return try UnixStreamAcceptor(path: path, ownsPath: true, descriptor: descriptor)
        } catch {
            Glibc.close(descriptor)
            unlink(path)
            throw error
        }
    }

    /// Uses `descriptor`, a listening socket systemd holds for `path` (socket activation), as systemd made it.
    ///
    /// - Throws: ``IngestError`` when a call fails.
    static func adopt(descriptor: Int32, path: String) throws -> UnixStreamAcceptor {
        try UnixStreamAcceptor(path: path, ownsPath: false, descriptor: descriptor)
    }

    private init(path: String, ownsPath: Bool, descriptor: Int32) throws {
        // Non-blocking, so that a connection that goes away between poll and accept cannot block the loop.
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw IngestError.socketCall("fcntl", path: path, SystemError.describe(errno))
        }
        let wakeDescriptor = cunixsocket_eventfd()
        guard wakeDescriptor >= 0 else {
            throw IngestError.socketCall("eventfd", path: path, SystemError.describe(errno))
        }
        self.path = path
        self.ownsPath = ownsPath
        self.descriptor = descriptor
        self.wakeDescriptor = wakeDescriptor
    }

    /// Blocks until a connection can be accepted or ``wake()`` is called, and accepts it.
    ///
    /// - Returns: The connection, its socket close-on-exec; `nil` once ``wake()`` has been called.
    /// - Throws: ``IngestError`` when accepting fails (out of descriptors, out of memory); the socket goes on.
    func accept() throws -> Accepted? {
        while true {
            guard try waitUntilReadable(descriptor, orWokenBy: wakeDescriptor, path: path) else { return nil }
            // Gone before it was taken, or taken by a signal: wait again.
            guard let accepted = try acceptWaiting() else { continue }
            return accepted
        }
    }

    /// The connections queued now, taken without waiting: what clients made before ``stopListening()``.
    func acceptQueued() -> [Accepted] {
        var queued: [Accepted] = []
        while let accepted = try? acceptWaiting() {
            queued.append(accepted)
        }
        return queued
    }

    /// Accepts one queued connection; `nil` when none is queued.
    private func acceptWaiting() throws -> Accepted? {
        let connection = cunixsocket_accept(descriptor)
        guard connection >= 0 else {
            if [EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED].contains(errno) { return nil }
            if [EMFILE, ENFILE].contains(errno) {
                throw IngestError.outOfDescriptors(path: path, SystemError.describe(errno))
            }
            throw IngestError.socketCall("accept", path: path, SystemError.describe(errno))
        }
        return try Accepted(connection, path: path)
    }

    /// Makes a waiting or later ``accept()`` return `nil`: nothing more is accepted.
    func wake() {
        ended.withLock { ended in
            guard !ended.isClosed else { return }
            var one: UInt64 = 1
            _ = write(wakeDescriptor, &one, MemoryLayout<UInt64>.size)
        }
    }

    /// Removes the file of a socket this acceptor bound, so that no client connects any more; the socket goes on
    /// holding what was queued. Does nothing for a socket systemd passed.
    func stopListening() {
        ended.withLock { ended in
            guard ownsPath, !ended.isUnlinked else { return }
            ended.isUnlinked = true
            unlink(path)
        }
    }

    /// Closes the socket, and removes the file it created if ``stopListening()`` has not; a socket systemd passed
    /// lives on in systemd.
    func close() {
        stopListening()
        ended.withLock { ended in
            guard !ended.isClosed else { return }
            ended.isClosed = true
            Glibc.close(descriptor)
            Glibc.close(wakeDescriptor)
        }
    }
}
