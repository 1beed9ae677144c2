import Foundation
import LogShip
import LogShipTestKit
import Synchronization
import Testing

/// What a local user can and cannot do to the daemon and to other users' records, tried as that user would.
@Suite("What a local user can and cannot do", .serialized)
struct LocalUserTests {
    /// Runs `arguments` as uid/gid 65534 (nobody), with no supplementary groups.
    static func asNobody(_ arguments: [String], stdin: Data? = nil) async throws -> ProcessResult {
        try await run(
            "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups"] + arguments, stdin: stdin)
    }

    static let canSwitchUser = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// Kibibytes of `field` (`VmRSS`, `VmHWM`) in `/proc/<pid>/status`.
    static func memory(_ field: String, of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("\(field):") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    @Test("""
        2 MB of newlines on the stream socket store nothing, are counted as blank, and raise RSS by far less than 40 MiB
        """)
    func newlineFlood() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url)
        let daemon = try await LogshipdProcess.start(directory: directory)
        // Idle, with one record delivered: the upload connection and its buffers exist.
        let stream = "\(directory)/ingest.sock"
        try await offloaded { try UnixClient(path: stream, type: .stream).write("before the newlines\n") }
        try await receiver.waitFor(records: 1)
        let idle = try Self.memory("VmRSS", of: daemon.pid)

        try await offloaded {
            let client = try UnixClient(path: stream, type: .stream)
            try client.write([UInt8](repeating: UInt8(ascii: "\n"), count: 2_000_000))
            try client.write("after the newlines\n")
        }
        try await receiver.waitFor(records: 2)
        let status = try await LogshipdProcess.status(directory: directory)
        let messages = receiver.records.map(\.message)
        #expect(
            messages.count == 2 && messages == ["before the newlines", "after the newlines"],
            "\(messages.count) records")
        #expect(status.blank == 2_000_000 && status.received == 2)
        #expect(status.pending.values.reduce(0, +) == 0 && status.evicted == 0)
        let peak = try Self.memory("VmHWM", of: daemon.pid)
        print("newline flood: idle \(idle / 1024) MiB, peak \(peak / 1024) MiB")
        #expect(peak - idle < 40 << 10, "peak RSS \(peak) KiB against \(idle) KiB idle")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test(
        """
        20 000 crash claims from nobody: its burst keeps the crash class, the rest arrive as marked errors, and root's \
        crash report goes ahead of them
        """,
        .enabled(if: canSwitchUser))
    func crashClaimFlood() async throws {
        // The receiver holds every request until root's record is accepted: the moment the test looks at is
        // "the flood in the spool", however fast this machine takes it in.
        let gate = Gate()
        defer { gate.open() }
        let daemon = try await TestDaemon.start(receiver: .init(hold: { _ in await gate.wait() })) {
            $0.ingest.socketMode = 0o666
            $0.upload.timeout = .seconds(600)
        }
        chmod(daemon.directory, 0o755)
        let claims = (0..<20_000).map { #"{"priority":"crash","message":"claim \#($0)"}"# + "\n" }.joined()
        let started = ContinuousClock.now
        let flood = try await Self.asNobody(
            ["/usr/bin/socat", "-u", "STDIN", "UNIX-CONNECT:\(daemon.streamPath)"], stdin: Data(claims.utf8))
        #expect(flood.status == 0, "\(flood.standardError)")
        try await eventually { try await daemon.status().received == 20_000 }
        let floodSeconds = (ContinuousClock.now - started).seconds

        let response = try await daemon.send([Submission(message: "root's crash", priority: "crash")])
        #expect(response.ok && response.demoted == nil, "root's claims are not counted")
        let claimedBeforeAcceptance = daemon.receiver.requests.compactMap(\.batch).max() ?? 0
        let maxInFlight = daemon.configuration.upload.maxInFlight
        gate.open()
        try await daemon.receiver.waitFor(records: 20_001, within: .seconds(300))

        let records = daemon.receiver.records.filter { $0.message.hasPrefix("claim ") }
        let kept = records.filter { $0.priority == .crash }
        let demoted = records.filter { $0.priority == .error }
        #expect(kept.count + demoted.count == 20_000 && Set(records.map(\.message)).count == 20_000, "none lost")
        // The burst of 100, and at most 10 a second regained while the flood came in.
        #expect(kept.count >= 100 && Double(kept.count) <= 100 + 10 * floodSeconds + 1, "\(kept.count) kept")
        #expect(demoted.allSatisfy {
            $0.fields["demoted_from"] == "crash" && $0.severity == .critical && $0.peer?.uid == 65534
        })
        #expect(try await daemon.status().demoted == demoted.count)

        // Claim order: root's record is in a claim ahead of every demoted record not already claimed.
        let requests = daemon.receiver.requests.sorted { $0.batch! < $1.batch! }
        let carrier = try #require(requests.first { $0.records.contains { $0.message == "root's crash" } })
        let demotedAhead = requests
            .filter { $0.batch! > claimedBeforeAcceptance + maxInFlight && $0.batch! < carrier.batch! }
            .flatMap(\.records).filter { $0.priority == .error }
        #expect(demotedAhead.isEmpty, "\(demotedAhead.count) demoted records went ahead of root's crash report")
        try await daemon.stop()
    }

    @Test(
        """
        a full spool evicts the noisy user's records, not the quiet one's: nobody's 10 lines survive root's flood of \
        20 000
        """,
        .enabled(if: canSwitchUser))
    func fairEviction() async throws {
        let daemon = try await TestDaemon.start {
            $0.ingest.socketMode = 0o666
            $0.spool.maxBytes = 256 << 10
        }
        chmod(daemon.directory, 0o755)
        #expect(try await run(Binaries.logctl, ["pause", "--socket", daemon.controlPath]).status == 0)
        let quiet = (0..<10).map { "<14>quiet \($0)\n" }.joined()
        let sent = try await Self.asNobody(
            ["/usr/bin/socat", "-u", "STDIN", "UNIX-CONNECT:\(daemon.streamPath)"], stdin: Data(quiet.utf8))
        #expect(sent.status == 0, "\(sent.standardError)")
        try await eventually { try await daemon.status().received == 10 }
        try await daemon.ingest((0..<20_000).map { "<14>noisy \($0)" })
        try await eventually { try await daemon.status().received == 20_010 }

        #expect(try await run(Binaries.logctl, ["resume", "--socket", daemon.controlPath]).status == 0)
        try await eventually {
            let status = try await daemon.status()
            return status.pending.values.reduce(0, +) == 0 && status.claimed == 0
                && status.delivered + status.evicted == 20_010
        }
        let delivered = daemon.receiver.records.map(\.message)
        #expect(delivered.filter { $0.hasPrefix("quiet") } == (0..<10).map { "quiet \($0)" }, "all of nobody's lines")
        #expect(try await daemon.status().evicted > 10_000, "the spool held far fewer than the flood")
        try await daemon.stop()
    }

    @Test(
        """
        40 control connections from nobody, each sending 8 MiB without a newline: each is refused at 1 MiB and closed \
        after the idle timeout, RSS stays bounded, root's status is answered
        """,
        .enabled(if: canSwitchUser))
    func controlFrameFlood() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        chmod(directory, 0o755)
        // Long enough that the payloads are written before any connection times out, however slow the machine.
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, ingest: ["socket_mode: \"0666\"", "control_idle_timeout: 20s"])
        let daemon = try await LogshipdProcess.start(directory: directory)
        _ = try await LogshipdProcess.status(directory: directory)
        let idle = try Self.memory("VmRSS", of: daemon.pid)

        let holder = try ConnectionHolder(
            asUser: 65534, target: "\(directory)/control.sock", count: 40, payloadBytes: 8 << 20,
            answer: "larger than the control socket's limit of 1MiB")
        try await waitUntil(within: .seconds(300)) { holder.hasWritten }
        #expect(holder.connected == 40, "\(holder.output)")
        try await waitUntil(within: .seconds(180)) { holder.answered == 40 }
        let status = try await LogshipdProcess.status(directory: directory)
        #expect(status.version == LogShipVersion.current, "root's status is answered meanwhile")
        try await waitUntil(within: .seconds(180)) { holder.closed == 40 }
        let peak = try Self.memory("VmHWM", of: daemon.pid)
        print("control frame flood: idle \(idle / 1024) MiB, peak \(peak / 1024) MiB")
        #expect(peak - idle < 80 << 10, "peak RSS \(peak) KiB against \(idle) KiB idle")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test(
        """
        a user holding every control connection it may leaves root's logctl status answered; a third user is turned away
        """,
        .enabled(if: canSwitchUser))
    func operatorNeverLockedOut() async throws {
        let daemon = try await TestDaemon.start {
            $0.ingest.socketMode = 0o666
            $0.ingest.maxConnections = 8
            $0.ingest.maxConnectionsPerUser = 8
            // The held connections must outlast the test, however slow the machine.
            $0.ingest.controlIdleTimeout = .seconds(600)
        }
        chmod(daemon.directory, 0o755)
        // Eight connections from nobody: four get in, the four kept for operators are refused to it.
        let holder = try ConnectionHolder(asUser: 65534, target: daemon.controlPath, count: 8)
        try await waitUntil { holder.closed == 4 }
        let other = try ConnectionHolder(asUser: 20_001, target: daemon.controlPath, count: 1)
        try await waitUntil { other.closed == 1 }

        // Refused, a client is told why rather than finding the connection closed.
        let refused = try await Self.asNobody([Binaries.logctl, "status", "--socket", daemon.controlPath])
        #expect(refused.status == 1)
        #expect(
            refused.standardError.contains(
                "refused the connection: too many control connections are open (ingest.max_connections 8, "
                    + "ingest.max_connections_per_user 8 per user)"),
            "\(refused.standardError)")
        let status = try await run(Binaries.logctl, ["status", "--socket", daemon.controlPath])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("logshipd \(LogShipVersion.current)"))
        #expect(holder.closed == 4, "nobody's four stay open: \(holder.output)")
        try await daemon.stop()
    }

    @Test("dead letters are for root and logshipd's user; a limit out of range is refused, not passed to SQLite",
          .enabled(if: canSwitchUser))
    func deadLetterAccess() async throws {
        let receiver = try await TestReceiver(behavior: .init { _, records in
            records.contains { $0.message.hasPrefix("poison") } ? 400 : 200
        })
        let daemon = try await TestDaemon.start(receiver: receiver) { $0.ingest.socketMode = 0o666 }
        chmod(daemon.directory, 0o755)
        #expect(try await daemon.send([Submission(message: "poison from root")]).ok)
        try await eventually { try await daemon.status().deadLetters == 1 }

        let asNobody = try await Self.asNobody([Binaries.logctl, "dead-letters", "--socket", daemon.controlPath])
        #expect(asNobody.status == 1 && !asNobody.standardOutput.contains("poison"))
        #expect(
            asNobody.standardError.contains("dead-letters needs root or logshipd's own user"),
            "\(asNobody.standardError)")

        let path = daemon.controlPath
        for limit in [-1, 0, 10_001] {
            let response = try await ControlConnection.connect(path: path)
                .send(ControlRequest(command: .deadLetters, limit: limit))
            #expect(!response.ok && response.error?.contains("limit \(limit) is out of range") == true, "\(response)")
        }
        let listed = try await run(Binaries.logctl, ["dead-letters", "--socket", daemon.controlPath])
        #expect(listed.status == 0 && listed.standardOutput.contains("poison from root"), "\(listed.standardError)")
        try await daemon.stop()
    }

    @Test("a request over 1 MiB gets a clear error; logctl cuts a longer line so that it fits, and marks it")
    func requestLimit() async throws {
        let daemon = try await TestDaemon.start { $0.ingest.maxRecordBytes = 512 << 10 }
        let response = try await daemon.send([Submission(message: String(repeating: "x", count: 2 << 20))])
        #expect(!response.ok)
        #expect(response.error?.contains("larger than the control socket's limit of 1MiB") == true, "\(response)")

        // 900 000 quotation marks: twice that once escaped, more than a request holds.
        let line = String(repeating: "\"", count: 900_000) + "\n"
        let sent = try await run(Binaries.logctl, ["send", "--socket", daemon.controlPath], stdin: Data(line.utf8))
        #expect(sent.status == 0, "\(sent.standardError)")
        try await daemon.receiver.waitFor(records: 1)
        let record = try #require(daemon.receiver.records.first)
        #expect(record.truncated && record.message.allSatisfy { $0 == "\"" } && record.message.utf8.count < 512 << 10)
        try await daemon.stop()
    }

    @Test("""
        an idle control connection is closed after the timeout, a flush that waits longer is still answered, and \
        logctl's client connects again
        """)
    func controlIdleTimeout() async throws {
        let gate = Gate()
        defer { gate.open() }
        let daemon = try await TestDaemon.start(receiver: .init(hold: { _ in await gate.wait() })) {
            $0.ingest.controlIdleTimeout = .seconds(1)
            $0.upload.timeout = .seconds(600)
        }
        let path = daemon.controlPath
        let client = try await ControlConnection.connect(path: path)
        #expect(try await client.send(ControlRequest(command: .status)).ok)
        #expect(try await daemon.send([Submission(message: "held")]).ok)
        try await daemon.receiver.waitFor(records: 1)

        // A flush that cannot finish while the receiver holds the record, connected before a connection that
        // sends nothing: once that one is closed, the flush's has been open longer than the timeout.
        let started = ContinuousClock.now
        let flushing = try await ControlConnection.connect(path: path)
        let flushDone = Atomic(false)
        let flush = Task {
            defer { flushDone.store(true, ordering: .relaxed) }
            return try await flushing.send(ControlRequest(command: .flush, timeout: 60))
        }
        let witness = try UnixClient(path: path, type: .stream)
        // It reads the daemon's greeting and nothing else, so that what is left to read is the close.
        try await waitUntil(within: .seconds(30)) { witness.drain() > 0 }
        try await waitUntil(within: .seconds(30)) { UnixClient.closedByPeer([witness]) == 1 }
        #expect(ContinuousClock.now - started >= .seconds(1), "not before the timeout")
        let flushDoneEarly = flushDone.load(ordering: .relaxed)
        #expect(!flushDoneEarly, "the flush is still waiting, past the idle timeout")
        gate.open()
        let flushed = try await flush.value
        #expect(flushed.ok, "the flush outlived the idle timeout: \(flushed.error ?? "")")

        // The status connection above has been idle as long as the witness: the client finds it closed and
        // connects again.
        #expect(try await client.send(ControlRequest(command: .status)).ok)
        try await daemon.stop()
    }

    @Test("a control client that sends requests and never reads the answers is closed after the idle timeout too")
    func controlClientNotReading() async throws {
        let daemon = try await TestDaemon.start { $0.ingest.controlIdleTimeout = .seconds(1) }
        let client = try UnixClient(path: daemon.controlPath, type: .stream)
        let request = Array(#"{"command":"status"}"#.utf8) + [UInt8(ascii: "\n")]
        // Requests until the socket takes no more: the daemon's answers fill its buffers, then ours.
        @Sendable func probe(_ bytes: [UInt8]) -> Int32 {
            send(client.descriptor, bytes, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) < 0 ? errno : 0
        }
        for _ in 0..<100_000 where probe(request) == 0 {}
        #expect(probe(request) == EAGAIN, "the daemon stopped taking requests it cannot answer")
        // Open and full reads EAGAIN; closed by the daemon, EPIPE. Nothing is read, so it stays full.
        try await waitUntil(within: .seconds(30)) { probe([UInt8(ascii: "\n")]) == EPIPE }
        try await daemon.stop()
    }

    @Test("a stop removes the socket file it bound at once, while it still serves the connections it accepted")
    func stopRemovesSocketFirst() async throws {
        let daemon = try await TestDaemon.start()
        let held = try UnixClient(path: daemon.streamPath, type: .stream)
        try held.write("<14>before the stop\n")
        try await daemon.receiver.waitFor(records: 1)
        let path = daemon.streamPath
        let stopping = Task { try await daemon.stop(keepDirectory: true) }
        try await waitUntil(within: .seconds(30)) { !FileManager.default.fileExists(atPath: path) }
        #expect(UnixClient.closedByPeer([held]) == 0, "gone before the drain ends: no client can connect to it now")
        #expect(throws: UnixClientError.self) { try UnixClient(path: path, type: .stream) }
        try held.write("<14>during the drain\n")
        withExtendedLifetime(held) {}
        try await stopping.value
        #expect(daemon.receiver.records.map(\.message) == ["before the stop", "during the drain"])
    }

    @Test("the metrics endpoint serves a few connections at once and closes idle ones", .enabled(if: canSwitchUser))
    func metricsConnections() async throws {
        let daemon = try await TestDaemon.start {
            $0.metrics.listen = "127.0.0.1:0"
            $0.metrics.maxConnections = 2
            $0.metrics.idleTimeout = .seconds(1)
        }
        let port = try #require(daemon.daemon.metricsAddress?.port)
        let holder = try ConnectionHolder(asUser: 65534, target: "127.0.0.1:\(port)", count: 3)
        try await waitUntil { holder.closed == 3 }
        #expect(holder.connected == 3, "\(holder.output)")
        #expect(holder.hasReported(closed: 1), "the third was closed at once, before the other two: \(holder.output)")
        try await daemon.stop()
    }
}
