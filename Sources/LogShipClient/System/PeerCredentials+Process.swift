import CUnixSocket
#if canImport(Glibc)
import Glibc
#endif

extension PeerCredentials {
    /// Credentials from the kernel, with `comm` read from `/proc/<pid>/comm`.
    package init(_ credentials: cunixsocket_credentials) {
        self.init(credentials, comm: Self.processName(of: credentials.pid))
    }

    /// Credentials from the kernel, with a `comm` already read for their pid.
    package init(_ credentials: cunixsocket_credentials, comm: String?) {
        self.init(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, comm: comm)
    }

    /// The name in `/proc/<pid>/comm`, or `nil` if the process is gone or the file is unreadable.
    package static func processName(of pid: Int32) -> String? {
        guard pid > 0 else { return nil }
        let descriptor = open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].trimmingLineEnding(), as: UTF8.self)
    }
}
