import Foundation
import LogShip
import LogShipTestKit
import Testing

/// The systemd units and the install script, as an operator gets them.
@Suite("Deployment under systemd")
struct DeployTests {
    static let systemdAnalyze = "/usr/bin/systemd-analyze"

    /// Installs into a fresh prefix (binaries from this build) and returns it.
    static func install() async throws -> String {
        let prefix = try TemporaryDirectory.make()
        let result = try await run(
            packageRoot.appendingPathComponent("scripts/install.sh").path, [],
            environment: ["PREFIX": prefix, "SYSCONFDIR": "\(prefix)/etc", "BIN_PATH": Binaries.directory.path])
        guard result.status == 0 else { throw WaitTimeout(description: "install.sh: \(result.standardError)") }
        return prefix
    }

    @Test("install adds bash, zsh and fish completions for both commands, and bash loads them")
    func completions() async throws {
        let prefix = try await Self.install()
        for path in [
            "share/bash-completion/completions/logshipd", "share/bash-completion/completions/logctl",
            "share/zsh/site-functions/_logshipd", "share/zsh/site-functions/_logctl",
            "share/fish/vendor_completions.d/logshipd.fish", "share/fish/vendor_completions.d/logctl.fish",
        ] {
            let script = (try? String(contentsOfFile: "\(prefix)/\(path)", encoding: .utf8)) ?? ""
            #expect(script.contains(path.contains("logctl") ? "receive" : "check-config"), "\(path)")
        }
        // bash sources the script and registers a completion function for logctl.
        let bash = try await run(
            "/bin/bash",
            ["-c", "source \"$0\" && complete -p logctl", "\(prefix)/share/bash-completion/completions/logctl"])
        #expect(bash.status == 0 && bash.standardOutput.contains("logctl"), "\(bash.standardError)")
    }

    @Test(
        "install puts binaries, units, sysusers.d, tmpfiles.d and the configuration in place, and says how to enable it"
    )
    func installLayout() async throws {
        let prefix = try await Self.install()
        for path in [
            "bin/logshipd", "bin/logctl", "lib/systemd/system/logshipd.service", "lib/systemd/system/logshipd.socket",
            "lib/sysusers.d/logshipd.conf", "lib/tmpfiles.d/logshipd.conf", "etc/logshipd/logshipd.yaml",
            "etc/logshipd/upload-token",
        ] {
            #expect(FileManager.default.fileExists(atPath: "\(prefix)/\(path)"), "\(path)")
        }
        let unit = try String(contentsOfFile: "\(prefix)/lib/systemd/system/logshipd.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\(prefix)/bin/logshipd --config \(prefix)/etc/logshipd/logshipd.yaml"))
        // The packaged configuration is valid as it stands, with the journal on.
        let configuration = try await ConfigurationLoader(environment: [:])
            .load(path: "\(prefix)/etc/logshipd/logshipd.yaml")
        #expect(configuration.journal.enabled)
        #expect(configuration.auth.bearerTokenFile == "/run/credentials/logshipd.service/upload-token")
    }

    @Test("install strips the binaries and keeps their debug information apart, under their build ids")
    func strippedBinaries() async throws {
        let prefix = try await Self.install()
        for command in ["logshipd", "logctl"] {
            let binary = "\(prefix)/bin/\(command)"
            let sections = try await run("/usr/bin/readelf", ["--sections", "--wide", binary]).standardOutput
            #expect(!sections.contains(".debug_info"), "\(command) still carries its debug information")
            #expect(sections.contains(".gnu_debuglink"), "\(command) does not name its debug file")
            let notes = try await run("/usr/bin/readelf", ["--notes", binary]).standardOutput
            let buildID = try #require(
                notes.split(separator: "\n").first { $0.contains("Build ID:") }?.split(separator: " ").last)
            let debugFile = "\(prefix)/lib/debug/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
            let debugSections = try await run("/usr/bin/readelf", ["--sections", "--wide", debugFile])
            #expect(debugSections.status == 0 && debugSections.standardOutput.contains(".debug_info"), "\(debugFile)")
            // Still runs.
            let help = try await run(binary, ["--help"])
            #expect(help.status == 0 && help.standardOutput.contains("USAGE"), "\(help.standardError)")
        }
    }

    @Test("systemd-analyze verify is clean and rates the service's exposure 2.0 or lower",
          .enabled(if: FileManager.default.isExecutableFile(atPath: systemdAnalyze)))
    func systemdAnalysis() async throws {
        let prefix = try await Self.install()
        let units = ["logshipd.service", "logshipd.socket"].map { "\(prefix)/lib/systemd/system/\($0)" }
        let verify = try await run(Self.systemdAnalyze, ["verify"] + units)
        #expect(verify.status == 0 && verify.standardError.isEmpty && verify.standardOutput.isEmpty,
                "\(verify.standardOutput)\(verify.standardError)")

        let security = try await run(Self.systemdAnalyze, ["security", "--offline=yes", units[0]])
        let line = security.standardOutput.split(separator: "\n").first { $0.contains("Overall exposure level") } ?? ""
        let exposure = line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
        let figure = try #require(exposure, "\(security.standardOutput)")
        print("systemd-analyze security: exposure \(figure)")
        #expect(figure <= 2.0)
    }

    @Test("a bearer token is read from its file, and a new token is used without a restart")
    func bearerToken() async throws {
        let directory = try TemporaryDirectory.make()
        let tokenFile = "\(directory)/token"
        try "first-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let receiver = try await TestReceiver()
        let daemon = try await TestDaemon.start(receiver: receiver) { $0.auth.bearerTokenFile = tokenFile }
        #expect(try await daemon.send([Submission(message: "one", priority: "info")]).ok)
        try await receiver.waitFor(records: 1)
        try "second-token".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        #expect(try await daemon.send([Submission(message: "two", priority: "info")]).ok)
        try await receiver.waitFor(records: 2)
        #expect(receiver.requests.map(\.authorization) == ["Bearer first-token", "Bearer second-token"])
        try await daemon.stop()
    }
}
