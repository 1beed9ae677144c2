import ArgumentParser
import Foundation
import LogShip
import Logging

/// The daemon: reads its configuration, binds its sockets, ships until SIGTERM.
@main
struct Logshipd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logshipd",
        abstract: "Ships log records to a remote HTTP endpoint, crash reports first.",
        version: LogShipVersion.current)

    private static let defaultConfig = "/etc/logshipd/logshipd.yaml"

    @Option(name: .long, help: "The YAML configuration file.")
    var config = Self.defaultConfig

    @Flag(
        name: .customLong("check-config"),
        help: """
            Check the configuration (with LOGSHIPD_* overrides), list every problem, and exit: \
            0 when it is valid, 1 when not.
            """)
    var checkConfig = false

    /// Tunes glibc's allocator, then parses the arguments and runs. Here rather than in `run()`, which runs on the
    /// cooperative pool after threads there have allocated: glibc reads its arena limit only when a thread that
    /// has no arena needs one, and a thread that took one before the limit keeps it. `@MainActor` keeps this body
    /// on the main thread, which starts it before any other thread exists; a nonisolated `main` would move to the
    /// pool first.
    @MainActor
    static func main() async {
        MallocTuning.applyForDaemon()
        await main(nil)
    }

    func run() async throws {
        // The default file may be absent (environment and defaults then apply); a named one must exist, and so
        // must the one a check is asked to check.
        let isDefaultAbsent = config == Self.defaultConfig && !FileManager.default.fileExists(atPath: config)
        if isDefaultAbsent && checkConfig {
            Self.fail("logshipd: configuration: \(config) does not exist; name the file to check with --config")
        }
        let path = isDefaultAbsent ? nil : config
        let configuration: DaemonConfiguration
        do {
            configuration = try await ConfigurationLoader().load(path: path)
        } catch let error as ConfigurationError {
            Self.fail(error.problems.map { "logshipd: configuration: \($0)" }.joined(separator: "\n"))
        } catch {
            Self.fail("logshipd: configuration: \(error)")
        }
        if checkConfig {
            for notice in configuration.notices { print("logshipd: configuration: note: \(notice)") }
            print("logshipd: configuration \(path ?? "(defaults and environment)") is valid")
            return
        }

        // The level is the configuration's, and a reload may change it.
        let logLevel = LogLevelControl(configuration.logLevel)
        LoggingSystem.bootstrap { label in
            ControlledLogHandler(StreamLogHandler.standardError(label: label), control: logLevel)
        }
        let logger = Logger(label: "logshipd")

        // The soft default (often 1024) is for programs that use select(); the connection caps assume more.
        OpenFileLimit.raiseToHardLimit()
        let daemon: Daemon
        do {
            daemon = try await Daemon.start(
                configuration: configuration, logger: logger,
                serviceManager: SystemdNotifier.fromEnvironment().map { ($0, SystemdNotifier.watchdogInterval()) },
                reloading: ({ try await ConfigurationLoader().load(path: path) }, logLevel))
        } catch {
            Self.fail("logshipd: \(error)")
        }
        try await daemon.run()
    }

    /// Prints one line to stderr and exits with status 1.
    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        Foundation.exit(1)
    }
}
