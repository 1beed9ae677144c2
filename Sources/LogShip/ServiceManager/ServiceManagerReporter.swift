import Foundation
import Logging
import ServiceLifecycle

/// Keeps the service manager informed while the daemon runs: a one-line `STATUS=` every few seconds, `WATCHDOG=1`
/// at half the watchdog interval while the shipping path is healthy, and `STOPPING=1` when shutdown begins.
///
/// The watchdog is fed only while no upload has been running far longer than `upload.timeout` allows (every
/// request is bounded by it): a wedged queue stops the pings, and systemd restarts the daemon, which a live
/// process with a stuck queue would never get otherwise.
public struct ServiceManagerReporter: Service {
    /// How often `STATUS=` is refreshed.
    static let statusInterval: Duration = .seconds(5)

    private let notifier: any ServiceManagerNotifier
    private let watchdogInterval: Duration?
    private let status: @Sendable () async -> String
    private let isShippingHealthy: @Sendable () -> Bool
    private let logger: Logger

    /// - Parameters:
    ///   - watchdogInterval: The interval systemd expects pings within (`WatchdogSec=`); `nil` sends none.
    ///   - status: The one-line summary for `STATUS=`.
    ///   - isShippingHealthy: Whether the shipping path is moving (no upload stuck).
    public init(
        notifier: any ServiceManagerNotifier, watchdogInterval: Duration?,
        status: @escaping @Sendable () async -> String,
        isShippingHealthy: @escaping @Sendable () -> Bool, logger: Logger
    ) {
        self.notifier = notifier
        self.watchdogInterval = watchdogInterval
        self.status = status
        self.isShippingHealthy = isShippingHealthy
        self.logger = logger
    }

    /// Reports until graceful shutdown, then sends `STOPPING=1`.
    public func run() async throws {
        try? await withGracefulShutdownHandler {
            try await cancelWhenGracefulShutdown { try await report() }
        } onGracefulShutdown: {
            notifier.notify("STOPPING=1")
        }
    }

    private func report() async throws {
        let tick = watchdogInterval.map { min($0 / 2, Self.statusInterval) } ?? Self.statusInterval
        var lastStatus = ""
        var sinceStatus = Self.statusInterval
        var wedged = false
        while true {
            if watchdogInterval != nil {
                if isShippingHealthy() {
                    notifier.notify("WATCHDOG=1")
                    if wedged { logger.notice("shipping moves again; feeding the watchdog") }
                    wedged = false
                } else if !wedged {
                    wedged = true
                    logger.critical("an upload is stuck far past upload.timeout; no longer feeding the watchdog")
                }
            }
            if sinceStatus >= Self.statusInterval {
                let line = await status()
                if line != lastStatus { notifier.notify("STATUS=\(line)") }
                lastStatus = line
                sinceStatus = .zero
            }
            try await Task.sleep(for: tick)  // the reporting period
            sinceStatus += tick
        }
    }
}
