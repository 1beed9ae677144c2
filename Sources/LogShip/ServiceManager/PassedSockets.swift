import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// The listening sockets systemd passed (socket activation, `sd_listen_fds_with_names`), for the daemon to use
/// instead of binding its own, so that they outlive its restarts; and the connections its file-descriptor store
/// kept for the daemon (``ConnectionStore``).
///
/// A socket is matched to an input by its `FileDescriptorName=` (`ingest`, `ingest-datagram`, `control`), or, when
/// one socket unit passes them all under one name, by the path it is bound to.
struct PassedSockets {
    private var sockets: [(descriptor: Int32, name: String)]

    /// Takes the sockets passed to this process (and clears `LISTEN_FDS` so that no child inherits them).
    static func take() -> PassedSockets {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else { return PassedSockets(sockets: []) }
        defer {
            for index in 0..<Int(count) { free(names?[index]) }
            free(names)
        }
        return PassedSockets(sockets: (0..<Int(count)).map { index in
            (SD_LISTEN_FDS_START + Int32(index), names?[index].map { String(cString: $0) } ?? "")
        })
    }

    /// The passed socket for an input: by name, or by being a socket of `type` bound to `path`.
    ///
    /// - Parameters:
    ///   - type: `SOCK_STREAM` or `SOCK_DGRAM`.
    mutating func take(name: String, path: String, type: Int32) -> Int32? {
        let index = sockets.firstIndex { $0.name == name }
            ?? sockets.firstIndex { socket in
                path.withCString {
                    sd_is_socket_unix(socket.descriptor, type, type == Int32(SOCK_STREAM.rawValue) ? 1 : -1, $0, 0)
                } > 0
            }
        guard let index else { return nil }
        return sockets.remove(at: index).descriptor
    }

    /// Every passed descriptor named `name`: the connections the service manager's store kept for the daemon.
    mutating func takeAll(name: String) -> [Int32] {
        defer { sockets.removeAll { $0.name == name } }
        return sockets.filter { $0.name == name }.map(\.descriptor)
    }

    /// Sockets no input claimed, with their names.
    var unclaimed: [(descriptor: Int32, name: String)] { sockets }
}
