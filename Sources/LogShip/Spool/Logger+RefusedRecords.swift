import Logging

extension Logger {
    /// Logs crash records a spool refused for want of room: the one place that says so, whichever input sent them.
    func reportRefused(_ count: Int) {
        guard count > 0 else { return }
        error("spool full of crash records; crash records refused", metadata: ["logship.spool.refused": "\(count)"])
    }
}
