import Foundation

extension Daemon {
    /// One line for `systemctl status`: what waits per class, what is in flight, what was delivered, and what
    /// the remote is doing.
    static func statusLine(shipper: Shipper, spool: any Spool) async -> String {
        let spoolStatistics = await spool.statistics()
        let shipping = shipper.statistics
        let pending = PriorityClass.mostUrgentFirst.map { "\($0)=\(spoolStatistics.pending[$0] ?? 0)" }
            .joined(separator: " ")
        let remote: String
        if shipping.pausedByOperator {
            remote = "uploads paused by an operator"
        } else if let pause = shipping.pause {
            remote = "paused until \(Timestamp(pause.until).rfc3339): \(pause.cause.rawValue) (\(pause.reason))"
        } else if let failure = shipping.lastFailure {
            remote = "retrying after \(failure.reason)"
        } else {
            remote = "remote accepting"
        }
        let rate = shipper.throttle.status
        var budget = ""
        if let effective = rate.effectiveBytesPerSecond {
            budget = "; rate \(ByteRateText.format(effective))"
            if let configured = rate.budgetBytesPerSecond, configured != effective { budget += " of \(ByteRateText.format(configured))" }
            if rate.isHeldDownByReceiver { budget += " (receiver overloaded)" }
        }
        return "pending \(pending); \(shipping.operationsInFlight) in flight; \(shipping.totals.delivered) delivered\(budget); \(remote)"
    }
}
