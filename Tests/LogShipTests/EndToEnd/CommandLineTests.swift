import Foundation
import LogShip
import Testing
import LogShipTestKit

/// The real `logctl` and `logshipd` binaries.
@Suite("logctl and logshipd binaries")
struct CommandLineTests {
    @Test("logctl send --priority crash arrives as a crash record from logctl, once accepted")
    func sendCrash() async throws {
        let daemon = try await TestDaemon.start()
        let logctl = try await ChildProcess.start(
            Binaries.logctl,
            [
                "send", "--socket", daemon.controlPath, "--priority", "crash", "--field", "worker=7",
                "segfault in worker 7",
            ])
        let pid = logctl.pid
        let result = try await logctl.wait()
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.isEmpty)

        try await daemon.receiver.waitFor(records: 1)
        let record = try #require(daemon.receiver.records.first)
        #expect(record.message == "segfault in worker 7")
        #expect(record.priority == .crash && record.severity == .critical)
        #expect(record.source == .control)
        #expect(record.fields == ["worker": "7"])
        #expect(record.peer?.pid == pid && record.peer?.uid == getuid() && record.peer?.comm == "logctl")
        try await daemon.stop()
    }

    @Test("stdin lines become one info record each, blank ones none, found through $LOGSHIPD_CONTROL")
    func sendStdin() async throws {
        let daemon = try await TestDaemon.start()
        let result = try await run(
            Binaries.logctl, ["send"], environment: ["LOGSHIPD_CONTROL": daemon.controlPath],
            stdin: Data("a\n\n \t\r\nb\n".utf8))
        #expect(result.status == 0, "\(result.standardError)")
        // logctl returns once the daemon has accepted what it sent: the spool has taken every record by now.
        #expect(daemon.daemon.intake.statistics.received == 2)
        try await daemon.receiver.waitFor(records: 2)
        #expect(daemon.receiver.records.map(\.message) == ["a", "b"])
        #expect(daemon.receiver.records.allSatisfy { $0.priority == .info && $0.severity == .informational })
        try await daemon.stop()
    }

    @Test("logctl send: 6 MiB of control characters in 512 KiB lines is accepted, in chunks under the request limit")
    func controlCharacterLines() async throws {
        let daemon = try await TestDaemon.start()
        // Each byte becomes six in the request's JSON (\u0001): counted raw, eight such lines made a 24 MiB request.
        let line = String(repeating: "\u{01}", count: 512 << 10)
        let input = Data((0..<12).map { "\($0)" + line + "\n" }.joined().utf8)
        let result = try await run(Binaries.logctl, ["send", "--socket", daemon.controlPath], stdin: input)
        #expect(result.status == 0, "\(result.standardError)")
        try await daemon.receiver.waitFor(records: 12, within: .seconds(180))
        let records = daemon.receiver.records
        #expect(records.count == 12)
        #expect(records.allSatisfy {
            $0.truncated && $0.message.utf8.count <= daemon.configuration.ingest.maxRecordBytes
        })
        try await daemon.stop()
    }

    @Test("logctl send against a stopped daemon exits non-zero with one clear line")
    func sendWithoutDaemon() async throws {
        let directory = try TemporaryDirectory.make()
        let result = try await run(Binaries.logctl, ["send", "--socket", "\(directory)/control.sock", "hello"])
        #expect(result.status != 0)
        #expect(
            result.standardError
                == "logctl: logshipd is not running (no daemon listening at \(directory)/control.sock)\n")
    }

    @Test("logctl send fails with a clear line when the spool is full of crash records")
    func crashRefused() async throws {
        let daemon = try await TestDaemon.start(receiver: .init(failureRate: 1, failureStatus: 503)) {
            $0.spool.maxBytes = 65_536
            $0.ingest.maxRecordBytes = 256
        }
        var refused: ProcessResult?
        for attempt in 0..<400 where refused == nil {
            let result = try await run(
                Binaries.logctl,
                [
                    "send", "--socket", daemon.controlPath, "--priority", "crash",
                    "crash \(attempt) " + String(repeating: "x", count: 200),
                ])
            if result.status != 0 { refused = result }
        }
        let result = try #require(refused, "a 64 KiB spool cannot hold 400 crash records")
        #expect(
            result.standardError
                == "logctl: spool full of crash records (spool.max_bytes 64 KiB): 1 record(s) refused\n")
        #expect(try await daemon.status().refused == 1)
        try await daemon.stop()
    }

    @Test("logctl send rejects an unknown priority before contacting the daemon")
    func badPriority() async throws {
        let result = try await run(Binaries.logctl, ["send", "--socket", "/nonexistent", "--priority", "fatal", "x"])
        #expect(result.status != 0)
        #expect(result.standardError.contains("unknown priority \"fatal\""))
    }

    @Test("--version prints the one version for both binaries")
    func version() async throws {
        let daemon = try await run(Binaries.logshipd, ["--version"])
        let control = try await run(Binaries.logctl, ["--version"])
        #expect(daemon.status == 0 && control.status == 0)
        #expect(daemon.standardOutput == "\(LogShipVersion.current)\n")
        #expect(control.standardOutput == daemon.standardOutput)
    }

    @Test("logctl's durations read as the configuration's, and a bad priority lists every spelling")
    func argumentErrors() async throws {
        let negative = try await run(Binaries.logctl, ["flush", "--timeout", "-1", "--socket", "/nonexistent"])
        #expect(negative.status != 0)
        #expect(
            negative.standardError.contains("invalid --timeout \"-1\": expected a duration from 1ms to 30d"),
            "\(negative.standardError)")
        let loud = try await run(Binaries.logctl, ["send", "--priority", "loud", "--socket", "/nonexistent", "x"])
        #expect(loud.status != 0)
        #expect(
            loud.standardError.contains("unknown priority \"loud\": use \(PriorityClass.spellings)"),
            "\(loud.standardError)")
        let help = try await run(Binaries.logctl, ["send", "--help"])
        #expect(help.standardOutput.contains("notice"), "the help lists the syslog names too")
    }

    @Test("--check-config with no file to check exits 1 and says so, rather than calling the defaults valid",
          .enabled(if: !FileManager.default.fileExists(atPath: "/etc/logshipd/logshipd.yaml")))
    func checkConfigWithoutFile() async throws {
        let result = try await run(Binaries.logshipd, ["--check-config"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("/etc/logshipd/logshipd.yaml does not exist"), "\(result.standardError)")
        let missing = try await run(Binaries.logshipd, ["--check-config", "--config", "/nonexistent/logshipd.yaml"])
        #expect(missing.status == 1 && missing.standardError.contains("/nonexistent/logshipd.yaml"))
    }

    @Test("--check-config lists every problem and exits 1; the shipped configuration exits 0 without starting")
    func checkConfig() async throws {
        let directory = try TemporaryDirectory.make()
        let path = "\(directory)/logshipd.yaml"
        try "upload:\n  urll: http://x\n  max_in_flight: lots\nspool:\n  max_bytes: -1\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let bad = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(bad.status == 1)
        let problems = bad.standardError.split(separator: "\n")
        #expect(problems.count == 4, "\(bad.standardError)")
        for expected in [
            "unknown key upload.urll", "upload.url is not set", "upload.max_in_flight: invalid value \"lots\"",
            "spool.max_bytes: invalid value \"-1\"",
        ] {
            #expect(
                problems.contains { $0.hasPrefix("logshipd: configuration: ") && $0.contains(expected) }, "\(expected)")
        }

        let shipped = packageRoot.appendingPathComponent("config/logshipd.yaml").path
        let good = try await run(Binaries.logshipd, ["--check-config", "--config", shipped])
        #expect(good.status == 0, "\(good.standardError)")
        #expect(good.standardOutput == "logshipd: configuration \(shipped) is valid\n")
    }

    @Test("logshipd stops on an unknown key or a bad value, naming it")
    func badConfiguration() async throws {
        let directory = try TemporaryDirectory.make()
        for (yaml, expected) in [
            ("upload:\n  urll: http://x\n", "unknown key upload.urll"),
            ("upload:\n  max_in_flight: lots\n", "upload.max_in_flight: invalid value \"lots\""),
        ] {
            let path = "\(directory)/logshipd.yaml"
            try yaml.write(toFile: path, atomically: true, encoding: .utf8)
            let result = try await run(Binaries.logshipd, ["--config", path])
            #expect(result.status == 1)
            #expect(result.standardError.contains(expected), "\(result.standardError)")
        }
    }

    @Test("SIGTERM with requests in flight: they complete, then logshipd exits 0 without waiting out the timeout")
    func gracefulShutdown() async throws {
        // The receiver holds the request until the daemon says it is waiting for it.
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(hold: { _ in await gate.wait() }))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, upload: ["shutdown_timeout: 10m", "timeout: 10m"], spool: "memory")
        let daemon = try await LogshipdProcess.start(directory: directory)
        let sent = try await run(
            Binaries.logctl, ["send", "--socket", "\(directory)/control.sock"], stdin: Data("one\ntwo\nthree\n".utf8))
        #expect(sent.status == 0, "\(sent.standardError)")
        try await waitUntil(within: .seconds(180)) { receiver.receiver.statistics.inFlight > 0 }

        daemon.signal(SIGTERM)
        try await waitUntil(within: .seconds(180)) {
            daemon.standardErrorSoFar.contains("waiting for requests in flight")
        }
        gate.open()
        // Well inside the 10-minute shutdown timeout: the daemon left when its request was answered.
        let result = try await daemon.wait(within: .seconds(180))

        #expect(result.status == 0, "\(result.standardError)")
        // The daemon may read the whole answer and exit before the receiver's task returns from writing it; a
        // request cut off instead would stay in flight, and this wait would fail.
        try await waitUntil(within: .seconds(180)) { receiver.receiver.statistics.inFlight == 0 }
        #expect(receiver.requests.allSatisfy { $0.status == 200 })
        #expect(receiver.records.map(\.message).sorted() == ["one", "three", "two"])
    }
}
