import Foundation
import LogShip
import LogShipTestKit
import Testing

/// What a new user meets first: `make run`'s configuration, README's examples on it, and the words of the errors
/// a first try runs into.
@Suite("First run")
struct FirstRunTests {
    static let readme =
        (try? String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""

    /// logshipd as `make run` starts it: config/logshipd.yaml, its sockets and spool moved by the environment.
    static func startAsMakeRun(directory: String, receiver: TestReceiver) async throws -> ChildProcess {
        let daemon = try await ChildProcess.start(
            Binaries.logshipd, ["--config", packageRoot.appendingPathComponent("config/logshipd.yaml").path],
            environment: [
                "LOGSHIPD_INGEST_STREAM": "\(directory)/ingest.sock",
                "LOGSHIPD_INGEST_DATAGRAM": "\(directory)/ingest.dgram",
                "LOGSHIPD_INGEST_CONTROL": "\(directory)/control.sock", "LOGSHIPD_SPOOL_PATH": "\(directory)/spool.db",
                "LOGSHIPD_UPLOAD_URL": receiver.url,
            ])
        try await waitUntil { FileManager.default.fileExists(atPath: "\(directory)/control.sock") }
        return daemon
    }

    /// The first column of each line of a `logctl status` table (`delivered`, `upload rate`), the class table's
    /// header whole; continuation and class lines have none.
    static func labels(_ table: some StringProtocol) -> [String] {
        table.split(separator: "\n").compactMap { line in
            if line.hasPrefix("class ") { return String(line) }
            let label = line.prefix(14).trimmingCharacters(in: .whitespaces)
            guard line.count > 14, !label.isEmpty,
                !PriorityClass.mostUrgentFirst.contains(where: { label.hasPrefix("\($0)") })
            else { return nil }
            return label
        }
    }

    @Test("""
        README's logctl throttle examples are taken on make run's configuration, and its status sample has every line \
        status prints, in order
        """)
    func readmeOnMakeRun() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        let daemon = try await Self.startAsMakeRun(directory: directory, receiver: receiver)
        let socket = "\(directory)/control.sock"

        let status = try await run(Binaries.logctl, ["status", "--socket", socket])
        #expect(status.status == 0, "\(status.standardError)")
        let fence = "$ .build/debug/logctl status --socket .run/control.sock\n"
        let sample = try #require(Self.readme.components(separatedBy: fence).dropFirst().first?
            .components(separatedBy: "```").first)
        let sampleLabels = Self.labels(sample)
        let printed = Self.labels(status.standardOutput)
        #expect(printed.first == sampleLabels.first, "the class table's header")
        // Each printed line is in the sample, in the same order (the sample, with the remote down, has more).
        var rest = sampleLabels[...]
        for label in printed {
            guard let found = rest.firstIndex(of: label) else {
                Issue.record(
                    "README's status sample lacks \"\(label)\" or has it out of order:\n\(status.standardOutput)")
                break
            }
            rest = rest[(found + 1)...]
        }

        let rates = Self.readme.matches(of: /`logctl throttle ([^`\s]+)`/).map { String($0.output.1) }
        #expect(rates.contains("off") && rates.count > 1, "\(rates)")
        for rate in rates {
            let result = try await run(Binaries.logctl, ["throttle", rate, "--socket", socket])
            #expect(result.status == 0, "logctl throttle \(rate): \(result.standardError)")
        }
        kill(daemon.pid, SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("logctl receive on a port in use says so in words naming the address")
    func receiveOnPortInUse() async throws {
        let receiver = try await TestReceiver()
        let port = try #require(receiver.receiver.address.port)
        let result = try await run(Binaries.logctl, ["receive", "--listen", "127.0.0.1:\(port)"])
        #expect(result.status != 0)
        #expect(
            result.standardError.contains("cannot listen on 127.0.0.1:\(port): address already in use"),
            "\(result.standardError)")
        #expect(!result.standardError.contains("errno"), "\(result.standardError)")
    }

    @Test("dead-letters --requeue with neither ids nor --all says what it needs; with both, that it takes one")
    func requeueWithoutIDs() async throws {
        let directory = try TemporaryDirectory.make()
        let neither = try await run(
            Binaries.logctl, ["dead-letters", "--requeue", "--socket", "\(directory)/control.sock"])
        #expect(neither.status != 0)
        #expect(
            neither.standardError.contains(
                "--requeue needs the ids of the dead letters (logctl dead-letters lists them), or --all"),
            "\(neither.standardError)")
        let both = try await run(
            Binaries.logctl, ["dead-letters", "--purge", "--all", "3", "--socket", "\(directory)/control.sock"])
        #expect(
            both.standardError.contains("--purge takes dead letter ids or --all, not both"), "\(both.standardError)")
    }

    @Test("--check-config warns of a LOGSHIPD_ variable that names no key, and names a mistyped key's nearest")
    func checkConfigSpelling() async throws {
        let shipped = packageRoot.appendingPathComponent("config/logshipd.yaml").path
        let typo = try await run(
            Binaries.logshipd, ["--check-config", "--config", shipped], environment: ["LOGSHIPD_UPLOAD_TIMEOUTT": "5s"])
        #expect(typo.status == 0, "\(typo.standardError)")
        #expect(
            typo.standardOutput.contains(
                "logshipd: configuration: note: LOGSHIPD_UPLOAD_TIMEOUTT overrides no configuration key and is "
                    + "ignored; did you mean LOGSHIPD_UPLOAD_TIMEOUT?"),
            "\(typo.standardOutput)")

        let directory = try TemporaryDirectory.make()
        let path = "\(directory)/logshipd.yaml"
        try "upload:\n  url: http://127.0.0.1:1/ingest\n  timout: 5s\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let mistyped = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(mistyped.status == 1)
        #expect(
            mistyped.standardError.contains("unknown key upload.timout; did you mean upload.timeout?"),
            "\(mistyped.standardError)")
    }
}
