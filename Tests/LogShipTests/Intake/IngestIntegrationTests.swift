import Foundation
import LogShip
import Synchronization
import Testing
import LogShipTestKit

/// The real `logger` from util-linux against the real sockets, through to a real HTTP receiver.
@Suite("Ingest sockets, end to end")
struct IngestIntegrationTests {
    struct LoggerCase: CustomTestStringConvertible, Sendable {
        var name: String
        var arguments: [String]
        var datagram: Bool
        var testDescription: String { name }
    }

    static let loggerCases: [LoggerCase] = [
        LoggerCase(name: "logger -T (local form)", arguments: ["-T"], datagram: false),
        LoggerCase(name: "logger -d (local form)", arguments: ["-d"], datagram: true),
        LoggerCase(name: "logger -T --rfc5424", arguments: ["-T", "--rfc5424"], datagram: false),
        LoggerCase(name: "logger -d --rfc5424", arguments: ["-d", "--rfc5424"], datagram: true),
        LoggerCase(name: "logger -d --rfc3164", arguments: ["-d", "--rfc3164"], datagram: true),
        LoggerCase(name: "logger -T --octet-count", arguments: ["-T", "--octet-count"], datagram: false),
        LoggerCase(
            name: "logger -T --octet-count --rfc5424", arguments: ["-T", "--octet-count", "--rfc5424"],
            datagram: false),
    ]

    @Test("what logger sends arrives with priority, message, timestamp, host and sender", arguments: loggerCases)
    func loggerForms(_ loggerCase: LoggerCase) async throws {
        let daemon = try await TestDaemon.start()
        let socket = loggerCase.datagram ? daemon.datagramPath : daemon.streamPath
        let message = "disk sda1 failed \(UUID().uuidString)"
        let before = Timestamp.now()
        let logger = try await ChildProcess.start(
            "/usr/bin/logger",
            ["-u", socket, "-t", "smartd", "-p", "daemon.err"] + loggerCase.arguments + [message])
        let loggerPID = logger.pid
        let result = try await logger.wait()
        #expect(result.status == 0, "logger: \(result.standardError)")

        try await daemon.receiver.waitFor(records: 1)
        let record = try #require(daemon.receiver.records.first)
        #expect(record.message == message)
        #expect(record.severity == .error)
        #expect(record.priority == .error)
        #expect(record.fields["syslog_identifier"] == "smartd")
        #expect(record.fields["syslog_facility"] == "daemon")
        #expect(record.source == (loggerCase.datagram ? .datagram : .socket))
        #expect(record.host == daemon.daemon.configuration.hostname.nonEmpty ?? Hostname.system)
        // RFC 3164 stamps whole seconds.
        #expect(record.timestamp.microsecondsSinceEpoch >= before.microsecondsSinceEpoch / 1_000_000 * 1_000_000)
        #expect(record.timestamp <= Timestamp.now())
        let peer = try #require(record.peer, "the kernel's credentials must be attached")
        #expect(peer.pid == loggerPID)
        #expect(peer.uid == getuid())
        #expect(peer.gid == getgid())
        // comm is read from /proc while the sender lives; logger may exit before its data is read.
        #expect(peer.comm == nil || peer.comm == "logger")
        try await daemon.stop()
    }

    @Test(
        "Python's logging.handlers.SysLogHandler: three calls are three records, on the stream and the datagram socket",
        arguments: [true, false])
    func pythonSysLogHandler(stream: Bool) async throws {
        let daemon = try await TestDaemon.start()
        let socket = stream ? daemon.streamPath : daemon.datagramPath
        let name = stream ? "py-stream" : "py-dgram"
        let script = """
            import logging, logging.handlers, socket, sys
            handler = logging.handlers.SysLogHandler(
                address=sys.argv[1], socktype=socket.SOCK_STREAM if sys.argv[2] == "stream" else socket.SOCK_DGRAM)
            log = logging.getLogger("app")
            log.addHandler(handler)
            log.setLevel(logging.INFO)
            log.error(sys.argv[3] + " error one")
            log.warning(sys.argv[3] + " warning two")
            log.info(sys.argv[3] + " info three")
            handler.close()
            """
        // The system's Python, as a service on the host would run it.
        let result = try await run("/usr/bin/env", ["python3", "-c", script, socket, stream ? "stream" : "dgram", name])
        #expect(result.status == 0, "python3: \(result.standardError)")
        try await daemon.receiver.waitFor(records: 3)
        try await daemon.stop()
        let records = daemon.receiver.records.sorted { $0.severity < $1.severity }
        #expect(records.map(\.message) == ["\(name) error one", "\(name) warning two", "\(name) info three"])
        #expect(records.map(\.severity) == [.error, .warning, .informational])
        #expect(records.allSatisfy { $0.fields["syslog_facility"] == "user" })
    }

    @Test("Perl's Sys::Syslog on the datagram socket: tag, pid, severity and message arrive")
    func perlSysSyslog() async throws {
        let daemon = try await TestDaemon.start()
        let script = """
            use Sys::Syslog qw(:standard :macros setlogsock);
            setlogsock({ type => "unix", path => $ARGV[0] }) or die "setlogsock: $!";
            openlog("perl-app", "pid", LOG_DAEMON);
            syslog(LOG_ERR, "perl error one");
            syslog(LOG_WARNING, "perl warning two");
            closelog();
            """
        let result = try await run("/usr/bin/perl", ["-e", script, daemon.datagramPath])
        #expect(result.status == 0, "perl: \(result.standardError)")
        try await daemon.receiver.waitFor(records: 2)
        try await daemon.stop()
        let records = daemon.receiver.records.sorted { $0.severity < $1.severity }
        #expect(records.map(\.message) == ["perl error one", "perl warning two"])
        #expect(records.map(\.severity) == [.error, .warning])
        #expect(records.allSatisfy {
            $0.fields["syslog_identifier"] == "perl-app" && $0.fields["syslog_facility"] == "daemon"
        })
        #expect(records.allSatisfy { $0.fields["syslog_pid"] != nil && $0.source == .datagram })
    }

    // Runs where syslog-ng is installed (`make bench` installs it for its comparison): installing it from the test
    // set-up would replace the system logger of a developer's machine.
    @Test("syslog-ng relaying into the stream socket with its default unix-stream() destination",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/syslog-ng")))
    func syslogNGRelay() async throws {
        let daemon = try await TestDaemon.start()
        let relayInput = "\(daemon.directory)/relay-in.sock"
        let configuration = "\(daemon.directory)/syslog-ng.conf"
        try """
            @version: 3.38
            options { keep-hostname(yes); };
            source s_in { unix-dgram("\(relayInput)"); };
            destination d_logshipd { unix-stream("\(daemon.streamPath)"); };
            log { source(s_in); destination(d_logshipd); };
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let relay = try await ChildProcess.start("/usr/sbin/syslog-ng", [
            "-F", "-e", "-f", configuration, "--no-caps", "-R", "\(daemon.directory)/syslog-ng.persist",
            "-p", "\(daemon.directory)/syslog-ng.pid", "-c", "\(daemon.directory)/syslog-ng.ctl",
        ])
        defer { relay.signal(SIGKILL) }
        try await waitUntil { FileManager.default.fileExists(atPath: relayInput) || !relay.isRunning }
        #expect(relay.isRunning, "syslog-ng: \(relay.standardErrorSoFar)")
        for index in 0..<3 {
            let result = try await run(
                "/usr/bin/logger",
                ["-u", relayInput, "-d", "-t", "relayed", "-p", "local3.warning", "via syslog-ng \(index)"])
            #expect(result.status == 0, "logger: \(result.standardError)")
        }
        try await daemon.receiver.waitFor(records: 3)
        relay.signal(SIGTERM)
        _ = try await relay.wait()
        try await daemon.stop()
        let records = daemon.receiver.records.sorted { $0.message < $1.message }
        #expect(records.map(\.message) == (0..<3).map { "via syslog-ng \($0)" })
        #expect(records.allSatisfy { $0.severity == .warning && $0.fields["syslog_identifier"] == "relayed" })
        #expect(records.allSatisfy { $0.fields["syslog_facility"] == "local3" })
    }

    @Test("a live client's pid, uid, gid and comm come from the kernel, not from the payload")
    func peerCredentials() async throws {
        let daemon = try await TestDaemon.start()
        try await daemon.ingest(["<11>Nov 21 05:06:08 fakehost fake[1]: spoofed"])
        let datagramPath = daemon.datagramPath
        try await offloaded {
            try UnixClient(path: datagramPath, type: .datagram).write(#"{"message":"dgram","pid":1}"#)
        }
        try await daemon.receiver.waitFor(records: 2)
        let ownComm = try String(contentsOfFile: "/proc/self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        for record in daemon.receiver.records {
            #expect(record.peer == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid(), comm: ownComm))
        }
        #expect(daemon.receiver.records.contains {
            $0.fields["syslog_pid"] == "1" && $0.fields["syslog_hostname"] == "fakehost"
        })
        try await daemon.stop()
    }

    @Test("datagrams of two live senders read in one go keep each sender's pid and comm")
    func sendersInOneRead() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        let datagramPath = "\(directory)/ingest.dgram"
        try LogshipdProcess.configure(directory: directory, url: receiver.url, ingest: ["datagram: \(datagramPath)"])
        let daemon = try await LogshipdProcess.start(directory: directory)
        defer { daemon.signal(SIGKILL) }

        // Stopped, the daemon reads nothing: all three datagrams wait in the socket and are read together after.
        daemon.signal(SIGSTOP)
        try await waitUntil(within: .seconds(30)) { Self.isStopped(daemon.pid) }
        try await offloaded { try UnixClient(path: datagramPath, type: .datagram).write("<14>first from the test") }
        // Perl sends, then lives until this process ends (or is killed below), so its comm stays readable.
        let perl = try await ChildProcess.start("/usr/bin/perl", [
            "-MSocket", "-e",
            #"socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die; "#
                + #"send($s, "<14>from perl", 0, pack_sockaddr_un($ARGV[0])) or die; print STDERR "sent\n"; "#
                + #"my $p = getppid(); sleep 1 while getppid() == $p"#,
            datagramPath,
        ])
        defer { perl.signal(SIGKILL) }
        try await waitUntil(within: .seconds(30)) { perl.standardErrorSoFar.contains("sent") || !perl.isRunning }
        try #require(perl.standardErrorSoFar.contains("sent"), "perl: \(perl.standardErrorSoFar)")
        try await offloaded { try UnixClient(path: datagramPath, type: .datagram).write("<14>second from the test") }
        daemon.signal(SIGCONT)

        try await receiver.waitFor(records: 3)
        let records = receiver.records
        // One read: the daemon stamps every datagram of a read with the same time.
        #expect(Set(records.map(\.timestamp)).count == 1, "\(records.map(\.timestamp))")
        let ownComm = try String(contentsOfFile: "/proc/self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        let peers = Dictionary(records.map { ($0.message, $0.peer) }, uniquingKeysWith: { first, _ in first })
        #expect(
            peers["first from the test"] == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid(), comm: ownComm))
        #expect(peers["from perl"] == PeerCredentials(pid: perl.pid, uid: getuid(), gid: getgid(), comm: "perl"))
        #expect(
            peers["second from the test"]
                == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid(), comm: ownComm))
    }

    /// Whether every thread of `pid` is stopped (`T` in /proc): a SIGSTOP has taken effect.
    private static func isStopped(_ pid: pid_t) -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else {
            return false
        }
        return tasks.allSatisfy { task in
            // A thread that has ended since the listing holds nothing up.
            ((try? ProcessStat(path: "/proc/\(pid)/task/\(task)/stat"))?.state ?? "T") == "T"
        }
    }

    @Test("a raw sd-daemon line, as socat sends it, arrives as an error record")
    func socatLine() async throws {
        let daemon = try await TestDaemon.start()
        let result = try await run(
            "/usr/bin/socat", ["-", "UNIX-CONNECT:\(daemon.streamPath)"], stdin: Data("<3>disk failed\n".utf8))
        #expect(result.status == 0, "socat: \(result.standardError)")
        try await daemon.receiver.waitFor(records: 1)
        let record = try #require(daemon.receiver.records.first)
        #expect(record.message == "disk failed")
        #expect(record.severity == .error && record.priority == .error)
        try await daemon.stop()
    }

    @Test("a 10 MB line, random bytes, invalid JSON, an idle and a byte-a-second client do not stop other clients")
    func hostileInput() async throws {
        let daemon = try await TestDaemon.start()
        let streamPath = daemon.streamPath

        // Connects and never writes; stays open for the whole test.
        let idle = try await offloaded { try UnixClient(path: streamPath, type: .stream) }
        // Writes its line a byte at a time, starting before the others and finishing after them.
        let slow = try await offloaded { try UnixClient(path: streamPath, type: .stream) }
        let slowLine = Array("slow but complete\n".utf8)
        try await offloaded { try slow.write(Array(slowLine.prefix(4))) }

        let huge = "<4>" + String(repeating: "x", count: 10 * 1024 * 1024) + "\n"
        try await daemon.ingest(bytes: Array(huge.utf8))
        var random = SystemRandomNumberGenerator()
        // One record: without the two bytes that end one (newline and NUL).
        let garbage = (0..<4096).map { _ in UInt8.random(in: 1...255, using: &random) }
            .filter { $0 != UInt8(ascii: "\n") }
        try await daemon.ingest(bytes: garbage + [UInt8(ascii: "\n")])
        try await daemon.ingest([#"{"priority":"crash","message": broken"#, "after the bad ones"])

        try await daemon.receiver.waitUntil { requests in
            requests.flatMap(\.records).contains { $0.message == "after the bad ones" }
        }
        #expect(!daemon.receiver.records.contains { $0.message.hasPrefix("slow") }, "the slow line is not complete yet")

        // The slow client writes on a schedule, one byte per tick: its behaviour, not synchronisation.
        var tick = ContinuousClock.now
        for byte in slowLine.dropFirst(4) {
            tick += .milliseconds(20)
            try await Task.sleep(until: tick)
            try await offloaded { try slow.write([byte]) }
        }
        // Each connection's records are stored on their own: the huge and the random one may come after the others.
        try await daemon.receiver.waitUntil { requests in
            let records = requests.flatMap(\.records)
            return records.count >= 5 && records.contains { $0.message == "slow but complete" }
                && records.contains { $0.message.hasPrefix("xxxx") }
        }

        let records = daemon.receiver.records
        let cut = try #require(records.first { $0.message.hasPrefix("xxxx") })
        #expect(cut.truncated)
        #expect(cut.severity == .warning)
        #expect(cut.message.utf8.count <= daemon.configuration.ingest.maxRecordBytes)
        #expect(cut.message.utf8.count > daemon.configuration.ingest.maxRecordBytes - 8)
        #expect(
            records.contains { $0.message.contains("\u{FFFD}") || $0.message.utf8.count > 100 },
            "the random line arrives")
        #expect(records.contains { $0.message == #"{"priority":"crash","message": broken"# && $0.priority == .info })
        #expect(records.count == 5)
        _ = idle
        try await daemon.stop()
    }

    @Test("a stale socket file is replaced; a socket a live daemon holds is refused with a clear error")
    func socketOwnership() async throws {
        let directory = try TemporaryDirectory.make()
        let stale = "\(directory)/ingest.sock"
        // A socket file whose listener is gone, as a crashed daemon leaves it.
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(stale.utf8)) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(descriptor)
        #expect(FileManager.default.fileExists(atPath: stale))

        let first = try await TestDaemon.start { $0.ingest.stream = stale }
        try await first.ingest(["through the replaced socket"])
        try await first.receiver.waitFor(records: 1)

        await #expect {
            _ = try await TestDaemon.start { $0.ingest.stream = stale }
        } throws: { error in
            "\(error)".contains(stale) && "\(error)".contains("in use")
        }
        try await first.stop()
    }

    /// Pauses delivery and sends error records until the spool's budget evicts one: info lines may evict none
    /// of them then.
    private static func pauseAndFillWithErrors(_ daemon: TestDaemon) async throws {
        #expect(try await run(Binaries.logctl, ["pause", "--socket", daemon.controlPath]).status == 0)
        var errors = 0
        while try await daemon.status().evicted == 0 {
            try await daemon.send(count: 50, priority: "error", prefix: "error \(errors)")
            errors += 50
        }
    }

    @Test("""
        lines that may evict nothing wait in their socket, not read past, until delivery makes room; then every one \
        arrives
        """)
    func linesWaitForRoom() async throws {
        let daemon = try await TestDaemon.start { $0.spool.maxBytes = 64 << 10 }
        try await Self.pauseAndFillWithErrors(daemon)
        let stored = try await daemon.status().pending["error"] ?? 0
        try await daemon.ingest((0..<100).map { "<14>waiting \($0)" })
        try await eventually { try await daemon.status().waitingForRoom > 0 }
        let waiting = try await daemon.status()
        #expect(waiting.refused == 0 && waiting.pending["info"] == 0, "\(waiting)")

        #expect(try await run(Binaries.logctl, ["resume", "--socket", daemon.controlPath]).status == 0)
        try await daemon.receiver.waitUntil { requests in
            Set(requests.flatMap(\.records).map(\.message).filter { $0.hasPrefix("waiting ") }).count == 100
        }
        #expect(daemon.receiver.records.filter { $0.priority == .error }.count >= stored)
        #expect(try await daemon.status().refused == 0)
        try await daemon.stop()
    }

    @Test("a stop while lines wait for room still ends: the lines that found no room are given up, not waited for")
    func stopWhileLinesWait() async throws {
        let daemon = try await TestDaemon.start {
            $0.spool.maxBytes = 64 << 10
            $0.upload.shutdownTimeout = .seconds(2)
        }
        try await Self.pauseAndFillWithErrors(daemon)
        // Two connections: the first one's lines wait without their reader, the second's with it.
        try await daemon.ingest((0..<100).map { "<14>waiting \($0)" })
        try await eventually { try await daemon.status().waitingForRoom > 0 }
        try await daemon.ingest((0..<100).map { "<14>held \($0)" })
        try await eventually { try await daemon.status().waitingForRoom > 100 }

        let stopped = Mutex(false)
        let stopping = Task {
            try await daemon.stop()
            stopped.withLock { $0 = true }
        }
        try await waitUntil(within: .seconds(300)) { stopped.withLock { $0 } }
        try await stopping.value
    }

    @Test("""
        a connection whose lines wait for room holds up only itself: a crash record from another connection is stored \
        meanwhile
        """)
    func waitingHoldsOnlyItsConnection() async throws {
        let daemon = try await TestDaemon.start { $0.spool.maxBytes = 64 << 10 }
        try await Self.pauseAndFillWithErrors(daemon)
        // More than the commit queue holds (1 024 records): were the lines waiting for room to keep every socket
        // out, the crash record would wait behind them.
        try await daemon.ingest((0..<3000).map { "<14>flood \($0)" })
        try await eventually { try await daemon.status().waitingForRoom > 0 }
        try await daemon.ingest([#"{"priority":"crash","message":"crash while a flood waits"}"#])
        try await eventually { try await daemon.status().pending["crash"] == 1 }
        let meanwhile = try await daemon.status()
        #expect(meanwhile.waitingForRoom > 0 && meanwhile.refused == 0, "\(meanwhile)")

        #expect(try await run(Binaries.logctl, ["resume", "--socket", daemon.controlPath]).status == 0)
        try await daemon.receiver.waitUntil { requests in
            requests.contains { $0.records.contains { $0.message == "crash while a flood waits" } }
        }
        try await daemon.stop()
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}

enum Hostname {
    /// The kernel's host name, which the daemon stamps when none is configured.
    static var system: String {
        (try? String(contentsOfFile: "/proc/sys/kernel/hostname", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }
}
