import Foundation

/// Connections held open by another user: a small Python process, run as `uid` with no supplementary groups,
/// connects to a Unix stream socket (or a TCP port) `count` times, writes `payload` bytes on each without a
/// newline, and then keeps them open until it is stopped, reporting how many the peer has closed and on how many
/// it has received an answer holding a given text.
public final class ConnectionHolder: Sendable {
    private let process: ChildProcess

    /// Python's own standard library only; run from /usr/bin/python3, which `make test-deps` makes sure of.
    private static let script = #"""
        import os, select, socket, sys, time
        target, count, payload = sys.argv[1], int(sys.argv[2]), b"x" * int(sys.argv[3])
        marker = sys.argv[4].encode()
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
        closed, received, reported = set(), {s: b"" for s in sockets}, None
        while True:
            for s in sockets:
                if s in closed:
                    continue
                readable, _, _ = select.select([s], [], [], 0)
                if readable:
                    try:
                        while True:
                            s.setblocking(False)
                            data = s.recv(65536)
                            if not data:
                                closed.add(s)
                                break
                            received[s] += data
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed.add(s)
            answered = sum(1 for data in received.values() if marker and marker in data)
            if (len(closed), answered) != reported:
                reported = (len(closed), answered)
                sys.stderr.write("closed %d\nanswered %d\n" % reported); sys.stderr.flush()
            time.sleep(0.02)
        """#

    /// Starts holding `count` connections to `target` (a socket path, or `host:port`) as `uid`.
    ///
    /// - Parameter answer: A text to look for in what each connection receives (``answered``).
    public init(asUser uid: UInt32, target: String, count: Int, payloadBytes: Int = 0, answer: String = "") throws {
        process = try ChildProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", Self.script, target,
             String(count), String(payloadBytes), answer])
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

    /// On how many connections the answer looked for has arrived so far, once the payloads are written.
    public var answered: Int? { lastReport("answered") }

    /// Whether the holder ever reported exactly `count` connections closed.
    public func hasReported(closed count: Int) -> Bool {
        process.standardErrorSoFar.split(separator: "\n").contains("closed \(count)")
    }

    /// What the holder printed, for a failing test's message.
    public var output: String { process.standardErrorSoFar }

    private func lastReport(_ word: String) -> Int? {
        process.standardErrorSoFar.split(separator: "\n").last { $0.hasPrefix("\(word) ") }
            .flatMap { Int($0.dropFirst(word.count + 1)) }
    }
}
