import CSystemd
import Foundation

/// systemd's notification socket, through libsystemd's `sd_notify`; and the watchdog interval systemd asks for.
public struct SystemdNotifier: ServiceManagerNotifier {
    /// The notifier when logshipd runs under systemd with `Type=notify` (`NOTIFY_SOCKET` is set), else `nil`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> SystemdNotifier?
    {
        environment["NOTIFY_SOCKET"].map { _ in SystemdNotifier() }
    }

    /// The watchdog interval systemd expects pings within (`WATCHDOG_USEC`, for this process), if any.
    public static func watchdogInterval() -> Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }

    public func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
