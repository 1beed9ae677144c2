#if canImport(Glibc)
import Glibc
#endif

/// Prepares a path for a listening Unix socket and sets its mode once bound.
enum UnixSocketPath {
    /// Makes `path` ready to bind: creates its directory, removes a stale socket file left by a process that
    /// died, and refuses to touch a socket that a live process still listens on or a file that is not a socket.
    ///
    /// - Throws: ``IngestError`` naming the path and what is in the way.
    static func prepare(_ path: String) throws {
        guard !path.isEmpty else { throw IngestError.socketPath(path, "is empty") }
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            throw IngestError.socketPath(path, "is longer than a Unix socket path may be")
        }
        if let failure = FileSystem.createParentDirectories(of: path, mode: 0o755) {
            throw IngestError.socketPath(path, failure)
        }

        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw IngestError.socketPath(path, "cannot be inspected: \(SystemError.describe(errno))")
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw IngestError.socketPath(path, "exists and is not a socket; refusing to replace it")
        }
        if isListening(path) {
            throw IngestError.socketPath(
                path, "is in use by a running process (is another logshipd running?)")
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw IngestError.socketPath(
                path, "is a stale socket that cannot be removed: \(SystemError.describe(errno))")
        }
    }

    /// Sets the mode of a bound socket file (`ingest.socket_mode`).
    static func setMode(_ path: String, mode: mode_t) throws {
        guard chmod(path, mode) == 0 else {
            throw IngestError.socketPath(path, "mode cannot be set: \(SystemError.describe(errno))")
        }
    }

    /// Whether something accepts connections (stream) or datagrams at `path`: a stale file refuses both.
    private static func isListening(_ path: String) -> Bool {
        for type in [Int32(SOCK_STREAM.rawValue), Int32(SOCK_DGRAM.rawValue), Int32(SOCK_SEQPACKET.rawValue)] {
            let descriptor = socket(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            let result = withUnixAddress(path) { address, length in connect(descriptor, address, length) }
            if result == 0 { return true }
            // EPROTOTYPE: a socket of another type is bound there, which still means it is alive.
            if errno != ECONNREFUSED && errno != EPROTOTYPE && errno != ENOENT { return true }
        }
        return false
    }
}
