/// Where the daemon tells its service manager how it is doing (`READY=1`, `STATUS=…`, `WATCHDOG=1`,
/// `STOPPING=1`): systemd through ``SystemdNotifier``, or a test's listener.
public protocol ServiceManagerNotifier: Sendable {
    /// Sends one notification, newline-separated `KEY=value` assignments.
    func notify(_ state: String)
}
