import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the configuration on SIGHUP (`systemctl reload logshipd`): reads it again, and if it is valid, has the
/// daemon apply what can change while running; a configuration with an error is rejected whole.
struct ReloadService: Service {
    private let hangups: UnixSignalsSequence
    private let load: @Sendable () async throws -> DaemonConfiguration
    private let live: LiveConfiguration
    private let notifier: (any ServiceManagerNotifier)?
    private let logger: Logger

    /// - Parameters:
    ///   - hangups: SIGHUP, trapped since the daemon began to start: one that comes before this service runs
    ///     (just after `READY=1`) waits here instead of ending the process.
    ///   - load: Reads the configuration as at start-up (file and environment).
    ///   - live: What applies it.
    init(
        hangups: UnixSignalsSequence, load: @escaping @Sendable () async throws -> DaemonConfiguration,
        live: LiveConfiguration, notifier: (any ServiceManagerNotifier)?, logger: Logger
    ) {
        self.hangups = hangups
        self.load = load
        self.live = live
        self.notifier = notifier
        self.logger = logger
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in hangups {
                await reload()
            }
        }
    }

    private func reload() async {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        notifier?.notify("RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)")
        defer { notifier?.notify("READY=1") }
        let configuration: DaemonConfiguration
        do {
            configuration = try await load()
        } catch {
            logger.error("reload rejected; the running configuration stays", metadata: ["logship.error": "\(error)"])
            return
        }
        let needRestart: [String]
        do {
            needRestart = try live.apply(configuration)
        } catch {
            logger.error("reload rejected; the running configuration stays", metadata: ["logship.error": "\(error)"])
            return
        }
        if needRestart.isEmpty {
            logger.notice("configuration reloaded")
        } else {
            logger.notice(
                "configuration reloaded; these changes need a restart and were not applied: \(needRestart.joined(separator: ", "))")
        }
    }
}
