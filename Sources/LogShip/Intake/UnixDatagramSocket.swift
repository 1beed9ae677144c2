import CUnixSocket
#if canImport(Glibc)
import Glibc
#endif

/// A bound Unix datagram socket that reports each sender's credentials (`SO_PASSCRED` / `SCM_CREDENTIALS`).
///
/// SwiftNIO's datagram channel does not surface `SCM_CREDENTIALS`, so this socket is read with `recvmsg` on a
/// thread of its own. An `eventfd` wakes that thread when the daemon stops.
struct UnixDatagramSocket: Sendable {
    /// One received datagram.
    struct Datagram: Sendable {
        var frame: Frame
        var peer: PeerCredentials?
    }

    let path: String
    /// Whether this socket created its file (and removes it); not when systemd passed the socket.
    private let ownsPath: Bool
    private let descriptor: Int32
    private let wakeDescriptor: Int32
    private let maximumRecordBytes: Int

    /// Binds `path` (replacing a stale socket file), enables credential passing and sets the file's mode.
    ///
    /// - Throws: ``IngestError`` when the path is in use or a call fails.
    static func bind(path: String, mode: mode_t, maximumRecordBytes: Int) throws -> UnixDatagramSocket {
        try UnixSocketPath.prepare(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw IngestError.socketCall("socket", path: path, SystemError.describe(errno)) }
        do {
            guard cunixsocket_enable_passcred(descriptor) == 0 else {
                throw IngestError.socketCall("setsockopt(SO_PASSCRED)", path: path, SystemError.describe(errno))
            }
            // A deeper receive queue absorbs bursts while a batch is being spooled; the kernel may cap it.
            var receiveBuffer: Int32 = 4 << 20
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
            guard withUnixAddress(path, { Glibc.bind(descriptor, $0, $1) }) == 0 else {
                throw IngestError.socketCall("bind", path: path, SystemError.describe(errno))
            }
            try UnixSocketPath.setMode(path, mode: mode)
            let wakeDescriptor = cunixsocket_eventfd()
            guard wakeDescriptor >= 0 else {
                throw IngestError.socketCall("eventfd", path: path, SystemError.describe(errno))
            }
            return UnixDatagramSocket(
                path: path, ownsPath: true, descriptor: descriptor, wakeDescriptor: wakeDescriptor,
                maximumRecordBytes: maximumRecordBytes)
        } catch {
            Glibc.close(descriptor)
            unlink(path)
            throw error
        }
    }

    /// Uses `descriptor`, a datagram socket systemd holds for `path` (socket activation), enabling credential
    /// passing on it.
    ///
    /// - Throws: ``IngestError`` when a call fails.
    static func adopt(descriptor: Int32, path: String, maximumRecordBytes: Int) throws -> UnixDatagramSocket {
        guard cunixsocket_enable_passcred(descriptor) == 0 else {
            throw IngestError.socketCall("setsockopt(SO_PASSCRED)", path: path, SystemError.describe(errno))
        }
        let wakeDescriptor = cunixsocket_eventfd()
        guard wakeDescriptor >= 0 else {
            throw IngestError.socketCall("eventfd", path: path, SystemError.describe(errno))
        }
        return UnixDatagramSocket(
            path: path, ownsPath: false, descriptor: descriptor, wakeDescriptor: wakeDescriptor,
            maximumRecordBytes: maximumRecordBytes)
    }

    /// A buffer for ``receive(limit:bytes:into:)``: one datagram of the longest record. The reader keeps it across
    /// calls rather than zeroing half a megabyte per wake-up.
    func makeReceiveBuffer() -> [UInt8] {
        [UInt8](repeating: 0, count: maximumRecordBytes)
    }

    /// Blocks until datagrams arrive or ``wake()`` is called, then returns up to `limit` of those queued, and
    /// none after the one that brings their size to `bytes`.
    ///
    /// - Parameter buffer: Where each datagram is read, from ``makeReceiveBuffer()``.
    /// - Returns: The datagrams read, never empty; `nil` once ``wake()`` has been called. A wake-up that finds
    ///   nothing to read (a signal, a datagram another reader took) waits again instead of returning empty, so
    ///   that an empty read can never be mistaken for the end.
    func receive(limit: Int, bytes: Int, into buffer: inout [UInt8]) throws -> [Datagram]? {
        while true {
            guard try waitUntilReadable(descriptor, orWokenBy: wakeDescriptor, path: path) else { return nil }

            var datagrams: [Datagram] = []
            var received = 0
            var senders = SenderNames()
            while datagrams.count < limit, received < bytes,
                let datagram = try receiveOne(into: &buffer, senders: &senders)
            {
                datagrams.append(datagram)
                received += datagram.frame.bytes.count
            }
            if !datagrams.isEmpty { return datagrams }
        }
    }

    /// The names of the processes that sent the datagrams of one read, each read from `/proc` once.
    ///
    /// A busy sender fills a read with datagrams of one pid, and opening `/proc/<pid>/comm` for each of them cost
    /// more than the rest of the datagram. Within one read, a millisecond at most, no pid is freed and reused.
    private struct SenderNames {
        private var last: (pid: Int32, name: String?)?

        mutating func name(of pid: Int32) -> String? {
            if let last, last.pid == pid { return last.name }
            let name = PeerCredentials.processName(of: pid)
            last = (pid, name)
            return name
        }
    }

    /// Reads one queued datagram without blocking; `nil` when none is queued.
    private func receiveOne(into buffer: inout [UInt8], senders: inout SenderNames) throws -> Datagram? {
        var credentials = cunixsocket_credentials()
        var hasCredentials: Int32 = 0
        let length = buffer.withUnsafeMutableBytes { bytes in
            cunixsocket_receive(descriptor, bytes.baseAddress, bytes.count, &credentials, &hasCredentials)
        }
        if length < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return nil }
            throw IngestError.socketCall("recvmsg", path: path, SystemError.describe(errno))
        }
        let kept = min(length, buffer.count)
        return Datagram(
            frame: Frame(bytes: Array(buffer[..<kept]), truncated: length > kept),
            // Read comm at once: a sender like `logger` exits right after sending.
            peer: hasCredentials != 0 ? PeerCredentials(credentials, comm: senders.name(of: credentials.pid)) : nil)
    }

    /// Makes a blocked or later ``receive(limit:bytes:)`` return at once.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// Closes the socket and removes the file it created.
    func close() {
        Glibc.close(descriptor)
        Glibc.close(wakeDescriptor)
        if ownsPath { unlink(path) }
    }
}
