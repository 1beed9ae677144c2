import Foundation

extension Daemon {
    /// One line for `systemctl status`: what waits per class, what is in flight, how many records were delivered
    /// and dead-lettered, the spool's disk, and what the remote is doing (its failure in words).
    static func statusLine(shipper: Shipper, spool: any Spool) async -> String {
        let spoolStatistics = await spool.statistics()
        let shipping = shipper.statistics
        let pending = PriorityClass.mostUrgentFirst.map { "\($0)=\(spoolStatistics.pending[$0] ?? 0)" }
            .joined(separator: " ")
        let rate = shipper.rateStatus
        var budget = ""
        if let effective = rate.effectiveBytesPerSecond {
            budget = "; rate \(ByteRateText.format(effective))"
            if let configured = rate.budgetBytesPerSecond, configured != effective {
                budget += " of \(ByteRateText.format(configured))"
            }
            if rate.isHeldDownByReceiver { budget += " (receiver overloaded)" }
        }
        let totals = shipping.totals
        return "pending \(pending); \(shipping.operationsInFlight) in flight; "
            + "\(totals.delivered) delivered, \(totals.deadLettered) dead-lettered\(budget)"
            + "\(diskText(spoolStatistics)); \(shipping.remoteState)"
    }

    /// `; disk 5.1 MiB free`, and what a short disk makes the spool do: evict (within the last summary
    /// interval), refuse, or leave the sockets unread while records wait for room.
    private static func diskText(_ statistics: SpoolStatistics) -> String {
        guard let disk = statistics.disk else { return "" }
        var text = "; disk \(ByteCountText.approximate(disk.free)) free"
        let short = statistics.lastDiskShortage.map { Date().timeIntervalSince($0) < SpoolRoomReports.interval.seconds }
        if short == true { text += ", below spool.min_free_disk: evicting or refusing records" }
        if statistics.waitingForRoom > 0 { text += ", \(statistics.waitingForRoom) record(s) wait for room" }
        return text
    }
}
