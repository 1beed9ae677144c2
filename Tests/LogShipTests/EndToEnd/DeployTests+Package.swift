import Foundation
import LogShipTestKit
import Testing

@testable import LogShip

/// The manual pages and the Debian package, as an operator gets them.
extension DeployTests {
    static let man = "/usr/bin/man"
    static let dpkgDeb = "/usr/bin/dpkg-deb"
    static let lintian = "/usr/bin/lintian"
    /// The release binaries `make deb` packages (`.build/release` links to them once `make release` has run).
    static let releaseBinaries = packageRoot.appendingPathComponent(".build/release")

    /// `man -l page`, as text: its status, what it printed and what it said on stderr (groff's warnings).
    static func render(_ page: String) async throws -> ProcessResult {
        try await run(Self.man, ["--warnings", "-l", page], environment: ["MANWIDTH": "100", "MANPAGER": "cat"])
    }

    @Test(
        """
        install puts logshipd(8), logctl(1) with every subcommand and logshipd.yaml(5) with every key in share/man; \
        man -l renders each
        """,
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: man), "man is missing: make test-deps installs man-db"))
    func manualPages() async throws {
        let prefix = try await Self.install()
        var pages: [String: String] = [:]
        for page in ["man8/logshipd.8", "man1/logctl.1", "man5/logshipd.yaml.5"] {
            let path = "\(prefix)/share/man/\(page).gz"
            #expect(FileManager.default.fileExists(atPath: path), "\(page)")
            let rendered = try await Self.render(path)
            #expect(rendered.status == 0 && rendered.standardError.isEmpty, "\(page): \(rendered.standardError)")
            pages[page] = rendered.standardOutput
        }
        let daemon = try #require(pages["man8/logshipd.8"])
        #expect(daemon.contains("--check-config") && daemon.contains("--config"))

        // Every subcommand logctl's own help describes, at every depth.
        let help = try await run(Binaries.logctl, ["--experimental-dump-help"])
        let tool = try #require(
            try JSONSerialization.jsonObject(with: Data(help.standardOutput.utf8)) as? [String: Any])
        func subcommands(of command: [String: Any], path: String) -> [String] {
            ((command["subcommands"] as? [[String: Any]]) ?? []).flatMap { sub -> [String] in
                guard let name = sub["commandName"] as? String, name != "help" else { return [] }
                return ["\(path) \(name)"] + subcommands(of: sub, path: "\(path) \(name)")
            }
        }
        let names = subcommands(of: try #require(tool["command"] as? [String: Any]), path: "logctl")
        #expect(names.contains("logctl receive") && names.contains("logctl dead-letters"))
        let logctl = try #require(pages["man1/logctl.1"])
        for name in names { #expect(logctl.contains(name), "logctl(1) lacks \(name)") }

        // Every key the loader knows (but the old name it still reads), with its default and what a reload does.
        let configuration = try #require(pages["man5/logshipd.yaml.5"])
        for key in ConfigurationLoader.knownKeys where key != "ingest.max_connections_per_process" {
            #expect(configuration.contains(key), "logshipd.yaml(5) lacks \(key)")
        }
        let flat = configuration.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(
            flat.contains("ingest.stream Default: /run/logshipd/ingest.sock. Takes: text. A change takes a restart."))
        #expect(flat.contains("upload.timeout Default: 10s. Takes: duration (ms, s, m, h). A reload applies it."))
    }

    @Test(
        """
        make deb's package: control fields, Depends from the binaries, conffiles, contents; installed into a scratch \
        root, removed and purged; lintian finds no error or warning
        """,
        .enabled(
            if: [dpkgDeb, lintian].allSatisfy(FileManager.default.isExecutableFile(atPath:)),
            "dpkg-deb or lintian is missing (make test-deps installs lintian; dpkg-deb is Debian's own)"),
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: releaseBinaries.appendingPathComponent("logshipd").path),
            "no release binaries to package: make release (or make deb) builds them"),
        .enabled(if: getuid() == 0, "dpkg --root installs as root only"))
    func debianPackage() async throws {
        let output = try TemporaryDirectory.make()
        let built = try await run(
            packageRoot.appendingPathComponent("scripts/build-deb.sh").path, [],
            environment: ["BIN_PATH": Self.releaseBinaries.path, "OUTPUT_DIR": output], within: .seconds(600))
        #expect(built.status == 0, "\(built.standardError)")
        let architecture = try await run("/usr/bin/dpkg", ["--print-architecture"]).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let package = "\(output)/logshipd_\(LogShipVersion.current)_\(architecture).deb"
        let debug = "\(output)/logshipd-dbgsym_\(LogShipVersion.current)_\(architecture).deb"

        func field(_ name: String, of deb: String = package) async throws -> String {
            try await run(Self.dpkgDeb, ["-f", deb, name]).standardOutput
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let (name, version) = (try await field("Package"), try await field("Version"))
        #expect(name == "logshipd" && version == LogShipVersion.current)
        let depends = try await field("Depends")
        for library in ["libc6", "libsqlite3-0", "libsystemd0", "libzstd1", "init-system-helpers"] {
            #expect(depends.contains(library), "Depends: \(depends)")
        }
        let debugDepends = try await field("Depends", of: debug)
        #expect(debugDepends == "logshipd (= \(LogShipVersion.current))")

        let control = try TemporaryDirectory.make()
        #expect(try await run(Self.dpkgDeb, ["-e", package, control]).status == 0)
        let conffiles = try String(contentsOfFile: "\(control)/conffiles", encoding: .utf8)
        #expect(conffiles == "/etc/logshipd/logshipd.yaml\n/etc/logshipd/upload-token\n")
        let postinst = try String(contentsOfFile: "\(control)/postinst", encoding: .utf8)
        #expect(postinst.contains("systemd-sysusers logshipd.conf") && postinst.contains("deb-systemd-helper enable"))
        let postrm = try String(contentsOfFile: "\(control)/postrm", encoding: .utf8)
        #expect(postrm.contains("rm -rf \"${DPKG_ROOT:-}/var/lib/logshipd\""))

        let contents = try await run(Self.dpkgDeb, ["-c", package]).standardOutput
        for path in [
            "./usr/bin/logshipd", "./usr/bin/logctl", "./lib/systemd/system/logshipd.service",
            "./lib/systemd/system/logshipd.socket", "./usr/lib/sysusers.d/logshipd.conf",
            "./usr/lib/tmpfiles.d/logshipd.conf", "./etc/logshipd/logshipd.yaml", "./usr/share/man/man8/logshipd.8.gz",
            "./usr/share/man/man1/logctl.1.gz", "./usr/share/man/man5/logshipd.yaml.5.gz",
            "./usr/share/doc/logshipd/copyright",
        ] {
            #expect(contents.contains(" \(path)\n"), "the package lacks \(path)")
        }
        #expect(!contents.contains("/usr/lib/debug/"), "debug information belongs in the -dbgsym package")
        #expect(try await run(Self.dpkgDeb, ["-c", debug]).standardOutput.contains("./usr/lib/debug/.build-id/"))

        // Installed into a scratch root, its scripts run outside it with DPKG_ROOT naming it (the host's systemd is
        // left alone): the units are enabled; a removal keeps the spool and the configuration, a purge deletes them.
        let root = try TemporaryDirectory.make()
        for directory in ["updates", "info"] {
            try FileManager.default.createDirectory(
                atPath: "\(root)/var/lib/dpkg/\(directory)", withIntermediateDirectories: true)
        }
        _ = FileManager.default.createFile(atPath: "\(root)/var/lib/dpkg/status", contents: nil)
        func dpkg(_ arguments: [String]) async throws {
            let result = try await run(
                "/usr/bin/dpkg", ["--root=\(root)", "--force-script-chrootless", "--force-depends"] + arguments)
            #expect(result.status == 0, "dpkg \(arguments): \(result.standardError)")
        }
        try await dpkg(["-i", package])
        let wants = "\(root)/etc/systemd/system"
        // Links to the units' installed paths, as systemctl enable makes them (dangling outside the scratch root).
        let link = { (path: String) in try? FileManager.default.destinationOfSymbolicLink(atPath: "\(wants)/\(path)") }
        #expect(link("sockets.target.wants/logshipd.socket") == "/lib/systemd/system/logshipd.socket")
        #expect(link("multi-user.target.wants/logshipd.service") == "/lib/systemd/system/logshipd.service")
        try FileManager.default.createDirectory(atPath: "\(root)/var/lib/logshipd", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: "\(root)/var/lib/logshipd/spool.db", contents: Data("records".utf8))
        try await dpkg(["-r", "logshipd"])
        #expect(FileManager.default.fileExists(atPath: "\(root)/var/lib/logshipd/spool.db"))
        #expect(FileManager.default.fileExists(atPath: "\(root)/etc/logshipd/logshipd.yaml"))
        #expect(!FileManager.default.fileExists(atPath: "\(root)/usr/bin/logshipd"))
        try await dpkg(["-P", "logshipd"])
        #expect(!FileManager.default.fileExists(atPath: "\(root)/var/lib/logshipd"))
        #expect(!FileManager.default.fileExists(atPath: "\(root)/etc/logshipd/logshipd.yaml"))

        let linted = try await run(Self.lintian, ["--fail-on", "warning", package, debug], within: .seconds(600))
        #expect(linted.status == 0, "\(linted.standardOutput)\(linted.standardError)")
        #expect(
            !linted.standardOutput.contains("E: ") && !linted.standardOutput.contains("W: "),
            "\(linted.standardOutput)")
    }
}
