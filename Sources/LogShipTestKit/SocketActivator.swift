import Foundation

/// Plays systemd's part in socket activation: holds logshipd's three listening sockets for as long as it lives,
/// and starts (and restarts) the daemon with them as fds 3, 4 and 5 (`LISTEN_FDS`, `LISTEN_FDNAMES`,
/// `LISTEN_PID`), as `systemd` does for a socket unit. While no daemon runs, connections and datagrams wait in
/// the kernel's queues.
public final class SocketActivator: @unchecked Sendable {
    // @unchecked: used from one test task; the descriptors are fixed after init.

    public let streamPath: String
    public let datagramPath: String
    public let controlPath: String
    private let descriptors: [Int32]
    private var child: pid_t = 0

    /// Binds and listens on `ingest.sock`, `ingest.dgram` and `control.sock` in `directory`.
    public init(directory: String) throws {
        streamPath = "\(directory)/ingest.sock"
        datagramPath = "\(directory)/ingest.dgram"
        controlPath = "\(directory)/control.sock"
        descriptors = try [
            Self.listen(streamPath, type: Int32(SOCK_STREAM.rawValue)),
            Self.listen(datagramPath, type: Int32(SOCK_DGRAM.rawValue)),
            Self.listen(controlPath, type: Int32(SOCK_STREAM.rawValue)),
        ]
    }

    deinit {
        if child > 0 { kill(child, SIGKILL) }
        for descriptor in descriptors { close(descriptor) }
    }

    /// Writes `logshipd.yaml` in `directory` for a daemon on these sockets, posting to `url`, with its durable
    /// spool in `directory`; returns its path. Requests and the stop wait up to ten minutes for the test's receiver:
    /// with the defaults, a loaded machine timed a request out (or cut it off at the stop) after the receiver had it,
    /// and the records it carried arrived twice.
    public func configure(directory: String, url: String) throws -> String {
        let configuration = "\(directory)/logshipd.yaml"
        try """
            ingest:
              stream: \(streamPath)
              datagram: \(datagramPath)
              control: \(controlPath)
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
    public func start(configuration: String, errorLog: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (index, descriptor) in descriptors.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, descriptor, 3 + Int32(index))
        }
        posix_spawn_file_actions_addopen(&actions, 2, errorLog, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        // The shell learns its pid ($$) and keeps it across exec: LISTEN_PID names the daemon.
        let script = #"LISTEN_PID=$$ LISTEN_FDS=3 LISTEN_FDNAMES=ingest:ingest-datagram:control exec "$0" "$@""#
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
        return try await offloaded {
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
