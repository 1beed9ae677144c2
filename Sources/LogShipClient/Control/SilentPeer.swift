import CUnixSocket
#if canImport(Glibc)
import Glibc
#endif

/// What the kernel says about a control socket that sent no greeting in time: whether its process is stopped,
/// and whether it ever took the connection.
enum SilentPeer: Hashable, Sendable {
    /// The process that listens on the socket is stopped (SIGSTOP, a debugger): its connections wait.
    case stopped(pid: Int32, name: String?)
    /// The connection still waits in the socket's queue: nothing has accepted it (a daemon busy, still
    /// starting, or out of file descriptors).
    case notAccepted
    /// Something accepted the connection and said nothing: a socket that is not a control socket.
    case acceptedSilently
    /// The kernel could not tell.
    case unknown

    /// Looks at the connection `descriptor`, which got no greeting.
    static func diagnose(_ descriptor: Int32) -> SilentPeer {
        var credentials = cunixsocket_credentials()
        var length = socklen_t(MemoryLayout<cunixsocket_credentials>.size)
        // The credentials of the process that made the socket listen: the daemon, or systemd for a socket it
        // passed on (which is never stopped, so that case is left to the queue).
        if getsockopt(descriptor, cunixsocket_sol_socket, cunixsocket_so_peercred, &credentials, &length) == 0,
            credentials.pid > 0, isStopped(credentials.pid)
        {
            return .stopped(pid: credentials.pid, name: PeerCredentials.processName(of: credentials.pid))
        }
        switch cunixsocket_peer_accepted(descriptor) {
        case 0: return .notAccepted
        case 1: return .acceptedSilently
        default: return .unknown
        }
    }

    /// Whether `/proc/<pid>/stat` gives the state `T` (stopped) or `t` (stopped by a tracer).
    private static func isStopped(_ pid: Int32) -> Bool {
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = read(descriptor, &buffer, buffer.count)
        // The state follows the command name, which may hold spaces and parentheses: after its last ')'.
        guard count > 0, let nameEnd = buffer[..<count].lastIndex(of: UInt8(ascii: ")")), nameEnd + 2 < count
        else { return false }
        return [UInt8(ascii: "T"), UInt8(ascii: "t")].contains(buffer[nameEnd + 2])
    }
}
