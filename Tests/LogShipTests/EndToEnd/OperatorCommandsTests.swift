import Foundation
import LogShip
import LogShipTestKit
import Testing

/// What an operator does with logctl: pause, resume, flush, and who may.
@Suite("Operator commands", .serialized)
struct OperatorCommandsTests {
    func logctl(_ arguments: [String], socket: String) async throws -> ProcessResult {
        try await run(Binaries.logctl, arguments + ["--socket", socket])
    }

    @Test("logctl pause stops requests while intake goes on; resume drains them, crash first")
    func pauseAndResume() async throws {
        // One slot: on resume the queue starts exactly one operation, which must be the crash's. With two, both
        // classes start together and either may claim first.
        let daemon = try await TestDaemon.start { $0.upload.maxInFlight = 1 }
        let paused = try await logctl(["pause"], socket: daemon.controlPath)
        #expect(paused.status == 0 && paused.standardOutput == "uploads paused\n", "\(paused.standardError)")
        try await daemon.send(count: 300, priority: "info", prefix: "waiting")
        #expect(try await daemon.send([Submission(message: "the crash", priority: "crash")]).ok)
        try await eventually { try await daemon.status().pending.values.reduce(0, +) == 301 }
        #expect(daemon.receiver.requests.isEmpty, "nothing was uploaded while paused")
        #expect(try await daemon.status().operatorPaused == true)

        let pausedAgain = try await logctl(["pause"], socket: daemon.controlPath)
        #expect(pausedAgain.status == 0 && pausedAgain.standardOutput == "uploads were paused already\n")
        let resumed = try await logctl(["resume"], socket: daemon.controlPath)
        #expect(resumed.status == 0 && resumed.standardOutput == "uploads resumed\n")
        let resumedAgain = try await logctl(["resume"], socket: daemon.controlPath)
        #expect(
            resumedAgain.status == 0 && resumedAgain.standardOutput == "uploads were not paused; nothing to resume\n")
        try await daemon.receiver.waitFor(records: 301)
        let first = try #require(daemon.receiver.requests.min { $0.batch! < $1.batch! })
        #expect(first.records.map(\.message) == ["the crash"])
        #expect(try await daemon.status().operatorPaused == false)
        try await daemon.stop()
    }

    @Test("""
        logctl pointed at an ingest socket says so within seconds and sends nothing there; the stream's records still \
        arrive
        """)
    func wrongSocket() async throws {
        let daemon = try await TestDaemon.start()
        for (command, socket) in [
            ("status", daemon.streamPath), ("pause", daemon.streamPath), ("send", daemon.datagramPath),
        ] {
            let started = ContinuousClock.now
            let result = try await run(
                Binaries.logctl, [command, "--socket", socket] + (command == "send" ? ["hello"] : []))
            #expect(result.status != 0, "\(command) on \(socket)")
            let expected = socket == daemon.streamPath ? "no greeting within" : "a datagram socket"
            #expect(
                result.standardError.contains(expected) && result.standardError.contains(socket),
                "\(result.standardError)")
            #expect(result.standardError.contains("is not logshipd's control socket"), "\(result.standardError)")
            #expect(result.standardError.contains("control.sock by default"), "names the socket it wants")
            #expect(ContinuousClock.now - started < .seconds(60), "no hang")
        }
        // The stream socket still takes lines, and what logctl wrote there never became a record.
        try await daemon.ingest(["after the slips"])
        try await daemon.receiver.waitUntil { $0.contains { $0.records.contains { $0.message == "after the slips" } } }
        #expect(
            !daemon.receiver.records.contains { $0.message.contains("command") },
            "\(daemon.receiver.records.map(\.message))")
        try await daemon.stop()
    }

    @Test("""
        logctl at a stopped daemon says it is stopped, at one that does not take the connection that it did not \
        answer; neither is called another socket, and nothing is sent
        """)
    func stoppedOrSilentDaemon() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url)
        let daemon = try await LogshipdProcess.start(directory: directory)
        let control = "\(directory)/control.sock"
        _ = try await LogshipdProcess.status(directory: directory)

        let stopped: ProcessResult
        do {
            daemon.signal(SIGSTOP)
            // Continued however this block ends, so that a failed wait leaves no stopped daemon behind.
            defer { daemon.signal(SIGCONT) }
            try await waitUntil { (try? ProcessStat(path: "/proc/\(daemon.pid)/stat").state) == "T" }
            stopped = try await logctl(["send", "while stopped"], socket: control)
        }
        #expect(stopped.status == 1)
        #expect(
            stopped.standardError.hasPrefix("logctl: logshipd (pid \(daemon.pid)) is stopped"),
            "\(stopped.standardError)")
        #expect(!stopped.standardError.contains("not logshipd's control socket"), "\(stopped.standardError)")
        #expect(stopped.standardError.contains("nothing was sent"), "\(stopped.standardError)")
        let after = try await logctl(["send", "after continuing"], socket: control)
        #expect(after.status == 0, "\(after.standardError)")
        try await receiver.waitUntil { $0.contains { $0.records.contains { $0.message == "after continuing" } } }
        #expect(!receiver.records.contains { $0.message == "while stopped" })

        // A listener that never accepts: a daemon too busy (or out of descriptors) to take the connection.
        let silent = "\(directory)/silent.sock"
        let listening = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listening) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(silent.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listening, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0 && listen(listening, 8) == 0)
        let busy = try await logctl(["status"], socket: silent)
        #expect(busy.status == 1)
        #expect(busy.standardError.contains("did not answer within 5s"), "\(busy.standardError)")
        #expect(!busy.standardError.contains("not logshipd's control socket"), "\(busy.standardError)")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("logctl flush --priority error returns once the error records sent before it have arrived, not before")
    func flush() async throws {
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(hold: { _ in await gate.wait() }))
        let daemon = try await TestDaemon.start(receiver: receiver) { $0.upload.timeout = .seconds(600) }
        try await daemon.send(count: 3, priority: "error", prefix: "urgent")
        try await receiver.waitFor(records: 3)

        // Held at the receiver, not yet acknowledged: the flush cannot be done.
        let early = try await logctl(["flush", "--priority", "error", "--timeout", "1s"], socket: daemon.controlPath)
        #expect(early.status == 1)
        #expect(
            early.standardError.contains("flush timed out: 3 record(s) of error and above"), "\(early.standardError)")

        gate.open()
        let flushed = try await logctl(["flush", "--priority", "error", "--timeout", "60s"], socket: daemon.controlPath)
        #expect(flushed.status == 0, "\(flushed.standardError)")
        #expect(receiver.requests.allSatisfy { $0.status == 200 })
        #expect(try await daemon.status().pending["error", default: 0] == 0)
        try await daemon.stop()
    }

    @Test("a user who is neither root nor logshipd's gets a clear refusal from logctl pause",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func refusal() async throws {
        let daemon = try await TestDaemon.start { $0.ingest.socketMode = 0o666 }
        chmod(daemon.directory, 0o755)
        let result = try await run(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", Binaries.logctl, "pause",
                "--socket", daemon.controlPath,
            ])
        #expect(result.status == 1)
        #expect(result.standardError == "logctl: pause needs root or logshipd's own user (uid 0); you are uid 65534\n")
        #expect(try await daemon.status().operatorPaused == false)
        let status = try await run(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", Binaries.logctl, "status",
                "--socket", daemon.controlPath,
            ])
        #expect(status.status == 0, "status is for anyone who may use the socket: \(status.standardError)")
        try await daemon.stop()
    }

    @Test("logctl status --json gives a scripted scenario's counts; the table shows them too")
    func statusJSON() async throws {
        let receiver = try await TestReceiver(behavior: .init { _, records in
            records.contains { $0.message.hasPrefix("poison") } ? 400 : 200
        })
        let daemon = try await TestDaemon.start(receiver: receiver)
        let submissions = (0..<10).map { Submission(message: $0 < 2 ? "poison \($0)" : "fine \($0)", priority: "info") }
        #expect(try await daemon.send(submissions).ok)
        // The shipper counts a delivery when its operation ends, a moment after the spool has settled it.
        try await eventually {
            let status = try await daemon.status()
            return status.deadLetters == 2 && status.delivered == 8 && status.deadLettered == 2 && status.claimed == 0
        }
        #expect(try await logctl(["pause"], socket: daemon.controlPath).status == 0)
        try await daemon.send(count: 5, priority: "error", prefix: "held")

        let result = try await logctl(["status", "--json"], socket: daemon.controlPath)
        #expect(result.status == 0, "\(result.standardError)")
        let status = try JSONDecoder().decode(DaemonStatus.self, from: Data(result.standardOutput.utf8))
        #expect(status.version == LogShipVersion.current)
        #expect(status.received == 15 && status.delivered == 8 && status.deadLettered == 2 && status.deadLetters == 2)
        #expect(status.pending["error"] == 5 && status.pending["info"] == 0 && status.claimed == 0)
        #expect(status.operatorPaused && status.spoolBudget == daemon.configuration.spool.maxBytes)
        #expect(status.oldestPendingAgeSeconds["error"] != nil && status.oldestPendingAgeSeconds["info"] == nil)

        let table = try await logctl(["status"], socket: daemon.controlPath)
        #expect(table.standardOutput.contains("error            5"), "\(table.standardOutput)")
        #expect(table.standardOutput.contains("dead letters  2 record(s) held, 2 dead-lettered since start"))
        #expect(table.standardOutput.contains("uploads       paused by an operator"))
        try await daemon.stop()
    }
}
