import CSpawn
import CUnixSocket
import Foundation
import Synchronization

/// Plays systemd's part in socket activation: holds logshipd's three listening sockets for as long as it lives,
/// and starts (and restarts) the daemon with them as fds 3, 4 and 5 (`LISTEN_FDS`, `LISTEN_FDNAMES`,
/// `LISTEN_PID`), as `systemd` does for a socket unit. While no daemon runs, connections and datagrams wait in
/// the kernel's queues.
///
/// With a file-descriptor store (`FileDescriptorStoreMax=`), it also plays the service manager's store: the daemon
/// learns its size from `FDSTORE`, hands descriptors to it with `FDSTORE=1` and `FDNAME=` on `NOTIFY_SOCKET`,
/// takes them out with `FDSTOREREMOVE=1`, and gets every descriptor stored after the sockets at each start, named
/// in `LISTEN_FDNAMES`.
public final class SocketActivator: @unchecked Sendable {
    // @unchecked: used from one test task; the descriptors are fixed after init, and the store is in a Mutex.

    public let streamPath: String
    public let datagramPath: String
    public let controlPath: String
    private let descriptors: [Int32]
    private let store: FileDescriptorStore?
    private var child: pid_t = 0

    /// Binds and listens on `ingest.sock`, `ingest.dgram` and `control.sock` in `directory`.
    ///
    /// - Parameter fileDescriptorStoreMax: How many descriptors the daemon may store, as `FileDescriptorStoreMax=`;
    ///   0 for no store (and no `NOTIFY_SOCKET`).
    public init(directory: String, fileDescriptorStoreMax: Int = 0) throws {
        streamPath = "\(directory)/ingest.sock"
        datagramPath = "\(directory)/ingest.dgram"
        controlPath = "\(directory)/control.sock"
        descriptors = try [
            Self.listen(streamPath, type: Int32(SOCK_STREAM.rawValue)),
            Self.listen(datagramPath, type: Int32(SOCK_DGRAM.rawValue)),
            Self.listen(controlPath, type: Int32(SOCK_STREAM.rawValue)),
        ]
        store = fileDescriptorStoreMax > 0
            ? try FileDescriptorStore(path: "\(directory)/notify.sock", maximum: fileDescriptorStoreMax) : nil
    }

    deinit {
        if child > 0 {
            // A test that threw before its stop: no daemon is left running, nor a zombie (reaped on a thread of its
            // own, since a deinit must not wait).
            kill(child, SIGKILL)
            Thread.detachNewThread { [child] in
                while waitpid(child, nil, 0) < 0 && errno == EINTR {}
            }
        }
        for descriptor in descriptors { close(descriptor) }
    }

    /// The names of the descriptors in the store now, one entry per descriptor.
    public var storedNames: [String] { store?.stored.map(\.name) ?? [] }

    /// Every notification the daemon sent, oldest first (only with a store, which gives it `NOTIFY_SOCKET`).
    public var notifications: [String] { store?.notifications ?? [] }

    /// Writes `logshipd.yaml` in `directory` for a daemon on these sockets, posting to `url`, with its durable
    /// spool in `directory` and `ingest` added to its `ingest` section; returns its path. Requests and the stop
    /// wait up to ten minutes for the test's receiver: with the defaults, a loaded machine timed a request out (or
    /// cut it off at the stop) after the receiver had it, and the records it carried arrived twice.
    public func configure(directory: String, url: String, ingest: [String] = []) throws -> String {
        let configuration = "\(directory)/logshipd.yaml"
        let ingestKeys = (["stream: \(streamPath)", "datagram: \(datagramPath)", "control: \(controlPath)"] + ingest)
            .map { "  \($0)" }.joined(separator: "\n")
        try """
            ingest:
            \(ingestKeys)
            upload:
              url: \(url)
              timeout: 10m
              shutdown_timeout: 10m
            spool:
              path: \(directory)/spool.db
              min_free_disk: 0
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        return configuration
    }

    /// Starts `logshipd --config configuration` with the sockets; its stderr goes to `errorLog`.
    ///
    /// The spawn is made on a thread of its own: `posix_spawn` returns only once the child has executed its
    /// program, which on a loaded machine takes a while, and the caller is often on the cooperative pool.
    public func start(configuration: String, errorLog: String) async throws {
        try await offloaded { try self.spawn(configuration: configuration, errorLog: errorLog) }
    }

    private func spawn(configuration: String, errorLog: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The store's descriptors follow the sockets, as systemd passes them; what the last daemon sent before it
        // exited is taken first, as systemd reads its notification socket before it sees a process exit.
        let stored = store?.drained() ?? []
        let passed = descriptors + stored.map(\.descriptor)
        // The dup2s run in order, so a descriptor numbered as the target of an earlier one would be replaced before
        // it is copied, and the daemon would get that earlier descriptor twice and never this one (in full test
        // runs, where numbers freed by other tests are reused, a stored connection was lost so). Copies numbered
        // above every target cannot be; they are close-on-exec.
        let copies = passed.map { fcntl($0, F_DUPFD_CLOEXEC, 3 + Int32(passed.count)) }
        defer { for copy in copies where copy >= 0 { close(copy) } }
        if copies.contains(-1) { throw UnixClientError(call: "fcntl(F_DUPFD_CLOEXEC)", errno: errno) }
        for (index, copy) in copies.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, copy, 3 + Int32(index))
        }
        // Nothing else of this process: NIO opens its sockets without close-on-exec (see ChildProcess).
        cspawn_add_close_from(&actions, 3 + Int32(passed.count))
        posix_spawn_file_actions_addopen(&actions, 2, errorLog, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let names = (["ingest", "ingest-datagram", "control"] + stored.map(\.name)).joined(separator: ":")
        let manager = store.map { "NOTIFY_SOCKET=\($0.path) FDSTORE=\($0.maximum) " } ?? ""
        // The shell learns its pid ($$) and keeps it across exec: LISTEN_PID names the daemon.
        let script = #"LISTEN_PID=$$ LISTEN_FDS="# + "\(3 + stored.count) LISTEN_FDNAMES=\(names) \(manager)"
            + #"exec "$0" "$@""#
        let arguments = ["/bin/sh", "-c", script, Binaries.logshipd, "--config", configuration]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in environment { free(variable) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, "/bin/sh", &actions, nil, &argv, &environment)
        guard result == 0 else { throw UnixClientError(call: "posix_spawn logshipd", errno: result) }
        child = pid
    }

    /// Stops the daemon with SIGTERM and waits for it to exit; returns its exit status.
    @discardableResult
    public func stop() async throws -> Int32 {
        guard child > 0 else { return 0 }
        kill(child, SIGTERM)
        let pid = child
        child = 0
        return await offloaded {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        }
    }

    private static func listen(_ path: String, type: Int32) throws -> Int32 {
        // Close-on-exec, so that no other child inherits it; the daemon gets its copy through dup2, which clears it.
        let descriptor = try bindUnixSocket(path, type: type)
        if type == Int32(SOCK_STREAM.rawValue) {
            // systemd's default `Backlog=`.
            guard Glibc.listen(descriptor, SOMAXCONN) == 0 else {
                throw UnixClientError(call: "listen \(path)", errno: errno)
            }
        }
        return descriptor
    }
}

/// The service manager's file-descriptor store: a `NOTIFY_SOCKET` read on a thread of its own (so that a daemon
/// storing more than the socket's queue holds never waits), keeping what `FDSTORE=1` hands over (up to
/// `maximum`, closing the rest as systemd does) until `FDSTOREREMOVE=1` names it. Messages are taken from the
/// socket and kept under one lock, so that ``drained()`` sees every message sent before it.
private final class FileDescriptorStore: Sendable {
    struct Stored: Sendable {
        var descriptor: Int32
        var name: String
    }

    let path: String
    let maximum: Int
    private let descriptor: Int32
    private let state = Mutex((stored: [Stored](), notifications: [String]()))

    init(path: String, maximum: Int) throws {
        self.path = path
        self.maximum = maximum
        descriptor = try bindUnixSocket(path, type: Int32(SOCK_DGRAM.rawValue))
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        Thread.detachNewThread { [self] in
            var readable = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            while poll(&readable, 1, -1) >= 0 || errno == EINTR {
                if readable.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return }
                state.withLock { receiveQueued(&$0) }
            }
        }
    }

    /// The descriptors in the store, once every message queued on the socket is taken.
    func drained() -> [Stored] {
        state.withLock { state in
            receiveQueued(&state)
            return state.stored
        }
    }

    private func receiveQueued(_ state: inout (stored: [Stored], notifications: [String])) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var received = [Int32](repeating: -1, count: 768)
        while true {
            var count: Int32 = 0
            let length = cunixsocket_receive_descriptors(
                descriptor, &buffer, buffer.count, &received, Int32(received.count), &count)
            if length < 0 && errno == EINTR { continue }
            guard length >= 0 else { return }
            receive(String(decoding: buffer[..<length], as: UTF8.self), Array(received[..<Int(count)]), &state)
        }
    }

    deinit {
        shutdown(descriptor, Int32(SHUT_RDWR))
        for stored in stored { close(stored.descriptor) }
    }

    var stored: [Stored] { state.withLock { $0.stored } }
    var notifications: [String] { state.withLock { $0.notifications } }

    private func receive(
        _ message: String, _ descriptors: [Int32], _ state: inout (stored: [Stored], notifications: [String])
    ) {
        var assignments: [String: String] = [:]
        for line in message.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            assignments[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        let name = assignments["FDNAME"] ?? "stored"
        state.notifications.append(message)
        var closing: [Int32] = []
        if assignments["FDSTOREREMOVE"] == "1" {
            closing += state.stored.filter { $0.name == name }.map(\.descriptor)
            state.stored.removeAll { $0.name == name }
        }
        if assignments["FDSTORE"] == "1" {
            let room = max(0, maximum - state.stored.count)
            state.stored += descriptors.prefix(room).map { Stored(descriptor: $0, name: name) }
            closing += descriptors.dropFirst(room)
        } else {
            closing += descriptors
        }
        // Closing under the lock is a test stand-in's shortcut: nothing else waits on it.
        for descriptor in closing { close(descriptor) }
    }
}
