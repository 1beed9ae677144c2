import CSystemd
import Foundation

/// The service manager's file-descriptor store (`FDSTORE=1`), as it keeps producers' connections across a
/// restart: a stop hands the connections to systemd, which passes them to the next start among the sockets
/// (`LISTEN_FDNAMES`), so that a long-lived writer does not see the restart at all. journald keeps its stream
/// clients the same way.
///
/// systemd 254 and later say how many descriptors the store keeps (`FileDescriptorStoreMax=`) in `FDSTORE`;
/// without that number nothing is stored, since systemd closes what does not fit, and a connection it closes
/// loses what its socket held.
struct ConnectionStore: Sendable {
    /// The name the connections are stored under, and passed back with.
    static let name = "ingest-connection"

    /// How many descriptors the store keeps.
    let capacity: Int

    /// The store when logshipd runs under a service manager that has one (`NOTIFY_SOCKET` and `FDSTORE` set).
    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> ConnectionStore?
    {
        guard environment["NOTIFY_SOCKET"] != nil, let capacity = environment["FDSTORE"].flatMap(Int.init),
            capacity > 0
        else { return nil }
        return ConnectionStore(capacity: capacity)
    }

    /// Hands `descriptors` to the store, at most ``capacity``; returns how many were sent. The caller still
    /// closes its own copies.
    func store(_ descriptors: [Int32]) -> Int {
        var sent = 0
        // A message carries at most 253 descriptors (the kernel's SCM_MAX_FD).
        for part in descriptors.prefix(capacity).chunked(253) {
            let result = Array(part).withUnsafeBufferPointer { buffer in
                sd_pid_notify_with_fds(0, 0, "FDSTORE=1\nFDNAME=\(Self.name)", buffer.baseAddress, UInt32(buffer.count))
            }
            guard result > 0 else { break }
            sent += part.count
        }
        return sent
    }

    /// Takes the connections passed back out of the store: from now on they are the daemon's alone, and a
    /// connection that ends is not kept open by the store.
    static func removeStored() {
        _ = sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=\(Self.name)")
    }
}
