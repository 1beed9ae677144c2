import Foundation

extension Daemon {
    /// One line for `systemctl status`: what waits per class, what is in flight, how many records were delivered
    /// and dead-lettered, and what the remote is doing (its failure in words).
    static func statusLine(shipper: Shipper, spool: any Spool) async -> String {
        let spoolStatistics = await spool.statistics()
        let shipping = shipper.statistics
        let pending = PriorityClass.mostUrgentFirst.map { "\($0)=\(spoolStatistics.pending[$0] ?? 0)" }
            .joined(separator: " ")
        let rate = shipper.rateStatus
        var budget = ""
        if let effective = rate.effectiveBytesPerSecond {
            budget = "; rate \(ByteRateText.format(effective))"
            if let configured = rate.budgetBytesPerSecond, configured != effective { budget += " of \(ByteRateText.format(configured))" }
            if rate.isHeldDownByReceiver { budget += " (receiver overloaded)" }
        }
        let totals = shipping.totals
        return "pending \(pending); \(shipping.operationsInFlight) in flight; "
            + "\(totals.delivered) delivered, \(totals.deadLettered) dead-lettered\(budget); \(shipping.remoteState)"
    }
}
