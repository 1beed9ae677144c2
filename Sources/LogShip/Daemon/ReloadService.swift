import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the configuration on SIGHUP (`systemctl reload logshipd`): reads it again and, if it is valid, names
/// `upload.url` and changes nothing that needs a restart, has the daemon apply it; any other file is refused
/// whole, in one log line saying why, and the running configuration stays.
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
            try live.apply(configuration)
        } catch {
            let reason = (error as? ConfigurationError)?.problems.joined(separator: "; ") ?? "\(error)"
            logger.error("reload refused; the running configuration stays: \(reason)")
            return
        }
        for notice in configuration.notices { logger.warning("configuration: \(notice)") }
        logger.notice("configuration reloaded")
    }
}
