import CSpawn
import Foundation
import Synchronization

/// Runs the real binaries (logshipd, logctl, logger) and collects what they print.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
}

public enum Binaries {
    /// The directory holding the test bundle, where SwiftPM also puts the `logshipd` and `logctl` executables.
    public static var directory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    public static var logshipd: String { directory.appendingPathComponent("logshipd").path }
    public static var logctl: String { directory.appendingPathComponent("logctl").path }
}

/// A started child process, spawned with `posix_spawn`.
///
/// Not Foundation's `Process`: on Linux it runs a run-loop thread of its own, reaps through `SIGCHLD` handling and
/// has had crashes when many processes start at once from several threads, which the parallel tests do. Here each
/// child has its own standard streams and a thread blocked in `waitid` for it alone. The streams are socket
/// pairs because those are created close-on-exec in one call (Glibc's module has no `pipe2`), so no other child
/// spawned at the same moment inherits them and holds them open; and writing to one whose reader has gone fails
/// with `EPIPE` instead of raising `SIGPIPE`.
///
/// - Important: A child still running when its last reference goes is killed (`SIGKILL`) and reaped: a test that
///   throws before it stops its daemon leaves none behind. Keep the value for as long as the child is to run.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    private let name: String
    private let output: OutputCollector
    private let error: OutputCollector
    private let exit = ExitStatus()

    /// Starts `executable` with `arguments`, this process's environment plus `environment`, and `stdin` as its
    /// whole standard input.
    ///
    /// - Throws: ``SpawnError`` when the pipes cannot be made or the executable cannot be started.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil
    ) throws {
        name = URL(fileURLWithPath: executable).lastPathComponent
        let input = try Self.stream()
        let outputPipe: (read: Int32, write: Int32)
        let errorPipe: (read: Int32, write: Int32)
        do {
            outputPipe = try Self.stream()
            do {
                errorPipe = try Self.stream()
            } catch {
                for descriptor in [outputPipe.read, outputPipe.write] { close(descriptor) }
                throw error
            }
        } catch {
            for descriptor in [input.read, input.write] { close(descriptor) }
            throw error
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copies, so the child keeps these three. Every other descriptor is
        // closed: NIO opens its sockets without close-on-exec, and a child that inherited an in-process receiver's
        // listening socket kept it listening, unanswered, after the receiver stopped.
        posix_spawn_file_actions_adddup2(&actions, input.read, 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe.write, 1)
        posix_spawn_file_actions_adddup2(&actions, errorPipe.write, 2)
        cspawn_add_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Signals this process ignores or blocks would stay ignored or blocked in the child.
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let variables = ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 }
        var argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, &argv, &envp)
        for descriptor in [input.read, outputPipe.write, errorPipe.write] { close(descriptor) }
        guard result == 0 else {
            for descriptor in [input.write, outputPipe.read, errorPipe.read] { close(descriptor) }
            throw SpawnError(executable: executable, errno: result)
        }
        self.pid = pid
        output = OutputCollector(outputPipe.read)
        error = OutputCollector(errorPipe.read)
        let exit = self.exit
        Thread.detachNewThread { [pid] in exit.watch(pid) }
        if let stdin {
            // Written on a thread of its own: the child reads at its own pace (logctl hands its input to a daemon
            // and waits for the answers), and the caller, often on the cooperative pool every test shares, must
            // not wait for it. A child that exits before reading everything (refusing its input) makes the write
            // fail with EPIPE; what it printed and its status tell the test why.
            Thread.detachNewThread { [descriptor = input.write] in
                ChildProcess.write(Array(stdin), to: descriptor)
                close(descriptor)
            }
        } else {
            close(input.write)
        }
    }

    deinit {
        // Dropped while running: a test threw before it stopped its child. The watcher reaps it once it is dead.
        exit.signal(pid, SIGKILL)
    }

    /// Starts a child as ``init(_:_:environment:stdin:)`` does, on a thread of its own: `posix_spawn` returns only
    /// once the child has executed its program (or failed to), which on a loaded machine takes a while, and the
    /// caller is often on the cooperative pool every test shares.
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil
    ) async throws -> ChildProcess {
        try await offloaded { try ChildProcess(executable, arguments, environment: environment, stdin: stdin) }
    }

    /// Whether the process has not exited yet.
    public var isRunning: Bool { exit.status == nil }

    /// What the process has written to stderr so far.
    public var standardErrorSoFar: String { error.text }

    /// Waits for the process to exit, at most `timeout`; kills it and throws if it does not.
    public func wait(within timeout: Duration = .seconds(60)) async throws -> ProcessResult {
        let exit = self.exit
        do {
            try await waitUntil(within: timeout) { exit.status != nil }
        } catch {
            exit.signal(pid, SIGKILL)
            throw WaitTimeout(description: "\(name) did not exit within \(timeout)")
        }
        // The pipes end once every process holding them has closed them.
        try await waitUntil(within: .seconds(10)) { self.output.isComplete && self.error.isComplete }
        return ProcessResult(status: exit.status ?? -1, standardOutput: output.text, standardError: error.text)
    }

    /// Sends `signal` to the child, unless it has exited and been reaped.
    public func signal(_ signal: Int32) {
        exit.signal(pid, signal)
    }

    /// A one-way stream: the child gets one end, this process the other.
    private static func stream() throws -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &descriptors) == 0
        else {
            throw SpawnError(executable: "socketpair", errno: errno)
        }
        return (descriptors[0], descriptors[1])
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}

/// A child process that could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    public var executable: String
    public var errno: Int32

    public var description: String { "cannot start \(executable): \(String(cString: strerror(errno)))" }
}

/// The exit status of a child, once its watcher has reaped it; the lock under which it is reaped and signalled.
///
/// A reaped child's pid may be given to another process at once, so a signal is sent only under the same lock as
/// the reap, and only before it: the watcher waits for the exit without reaping (`WNOWAIT`), then reaps and
/// records the status in one step under the lock.
private final class ExitStatus: Sendable {
    private let value = Mutex<Int32?>(nil)

    var status: Int32? { value.withLock { $0 } }

    /// Waits for `pid` to exit, then reaps it and records its status. Runs on a thread of its own.
    func watch(_ pid: pid_t) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        value.withLock { status in
            // The child has exited (or cannot be waited for): this waitpid returns at once.
            var raw: Int32 = 0
            var result = waitpid(pid, &raw, 0)
            while result < 0 && errno == EINTR { result = waitpid(pid, &raw, 0) }
            // The exit code, or the number of the signal that ended it, as Foundation's Process reports it; -1
            // when the child could not be waited for.
            status = result < 0 ? -1 : (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : raw & 0x7f
        }
    }

    /// Sends `signal` to `pid` if it has not been reaped yet.
    func signal(_ pid: pid_t, _ signal: Int32) {
        value.withLock { status in
            if status == nil { kill(pid, signal) }
        }
    }
}

/// Reads a pipe to its end on a thread of its own, so a test can look at what a running process has printed.
private final class OutputCollector: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var isComplete = false
    }

    private let state = Mutex(State())

    /// Reads `descriptor` until its end, then closes it.
    init(_ descriptor: Int32) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                state.withLock { $0.bytes += buffer[..<count] }
            }
            close(descriptor)
            state.withLock { $0.isComplete = true }
        }
    }

    var text: String { state.withLock { String(decoding: $0.bytes, as: UTF8.self) } }

    var isComplete: Bool { state.withLock { $0.isComplete } }
}

/// Runs a command to completion.
///
/// - Parameter timeout: How long the command may take, reading `stdin` included: a `logctl send` of megabytes
///   takes a loaded machine a minute or more.
public func run(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
    within timeout: Duration = .seconds(180)
) async throws -> ProcessResult {
    try await ChildProcess.start(executable, arguments, environment: environment, stdin: stdin).wait(within: timeout)
}

/// A helper command a test relies on (openssl, journalctl, python) that did not succeed.
public struct CommandFailed: Error, CustomStringConvertible {
    public var description: String

    public init(_ command: String, _ result: ProcessResult) {
        description = "\(command) exited \(result.status): \(result.standardError)"
    }
}
