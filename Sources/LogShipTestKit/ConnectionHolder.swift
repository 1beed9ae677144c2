import Foundation

/// Connections held open by another user: a small Python process, run as `uid` with no supplementary groups,
/// connects to a Unix stream socket (or a TCP port) `count` times, writes `payload` bytes on each without a
/// newline, and then keeps them open until it is stopped, reporting how many the peer has closed.
public final class ConnectionHolder: Sendable {
    private let process: ChildProcess

    /// Python's own standard library only; run from /usr/bin/python3, which `make test-deps` makes sure of.
    private static let script = #"""
        import os, select, socket, sys, time
        target, count, payload = sys.argv[1], int(sys.argv[2]), b"x" * int(sys.argv[3])
        sockets = []
        for _ in range(count):
            if target.startswith("/"):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                address = target
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                host, port = target.rsplit(":", 1)
                address = (host, int(port))
            try:
                s.connect(address)
            except OSError:
                s.close()
                continue
            sockets.append(s)
        sys.stderr.write("connected %d\n" % len(sockets)); sys.stderr.flush()
        for s in sockets:
            s.settimeout(10)
            try:
                s.sendall(payload)
            except OSError:
                pass
        sys.stderr.write("written\n"); sys.stderr.flush()
        closed, reported = set(), -1
        while True:
            for s in sockets:
                if s in closed:
                    continue
                readable, _, _ = select.select([s], [], [], 0)
                if readable:
                    try:
                        while True:
                            s.setblocking(False)
                            if not s.recv(65536):
                                closed.add(s)
                                break
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed.add(s)
            if len(closed) != reported:
                reported = len(closed)
                sys.stderr.write("closed %d\n" % reported); sys.stderr.flush()
            time.sleep(0.02)
        """#

    /// Starts holding `count` connections to `target` (a socket path, or `host:port`) as `uid`.
    public init(asUser uid: UInt32, target: String, count: Int, payloadBytes: Int = 0) throws {
        process = try ChildProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", Self.script, target,
             String(count), String(payloadBytes)])
    }

    deinit {
        process.signal(SIGKILL)
    }

    /// How many connections were made, once all have been tried; `nil` before.
    public var connected: Int? { lastReport("connected") }

    /// Whether every payload has been written (or refused).
    public var hasWritten: Bool { process.standardErrorSoFar.contains("written\n") }

    /// How many of the connections the peer has closed so far, once the payloads are written.
    public var closed: Int? { lastReport("closed") }

    /// What the holder printed, for a failing test's message.
    public var output: String { process.standardErrorSoFar }

    private func lastReport(_ word: String) -> Int? {
        process.standardErrorSoFar.split(separator: "\n").last { $0.hasPrefix("\(word) ") }
            .flatMap { Int($0.dropFirst(word.count + 1)) }
    }
}
