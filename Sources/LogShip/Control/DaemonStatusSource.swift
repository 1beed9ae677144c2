import Foundation

/// Gathers the daemon's status from its parts: for `logctl status`, `STATUS=` and the metrics endpoint alike.
final class DaemonStatusSource: Sendable {
    private let intake: RecordIntake
    private let shipper: Shipper
    private let spool: any Spool
    private let journal: JournalIngestServer?
    private let refusals: ConnectionRefusals
    /// `spool.max_bytes`.
    private let spoolBudget: Int
    private let startedAt = ContinuousClock.now

    init(
        intake: RecordIntake, shipper: Shipper, spool: any Spool, journal: JournalIngestServer?,
        refusals: ConnectionRefusals, spoolBudget: Int
    ) {
        self.intake = intake
        self.shipper = shipper
        self.spool = spool
        self.journal = journal
        self.refusals = refusals
        self.spoolBudget = spoolBudget
    }

    /// The daemon's status now.
    func status() async -> DaemonStatus {
        let intakeStatistics = intake.statistics
        let shipping = shipper.statistics
        let spoolStatistics = await spool.statistics()
        let now = Timestamp.now()
        var status = DaemonStatus()
        status.version = LogShipVersion.current
        status.uptimeSeconds = (ContinuousClock.now - startedAt).seconds
        status.received = intakeStatistics.received
        status.truncated = intakeStatistics.truncated
        status.blank = intakeStatistics.blank
        status.demoted = intakeStatistics.demoted
        status.pending = Dictionary(
            uniqueKeysWithValues: spoolStatistics.pending.map { ($0.key.description, $0.value) })
        if let oldest = try? await spool.oldestTimestamps() {
            status.oldestPendingAgeSeconds = Dictionary(uniqueKeysWithValues: oldest.map { priority, timestamp in
                (
                    priority.description,
                    Double(max(0, now.microsecondsSinceEpoch - timestamp.microsecondsSinceEpoch)) / 1e6
                )
            })
        }
        status.claimed = spoolStatistics.claimed
        status.spoolBytes = spoolStatistics.bytes
        status.spoolBudget = spoolBudget
        status.evicted = spoolStatistics.evicted
        status.refused = spoolStatistics.refused
        status.evictedForDisk = spoolStatistics.evictedForDisk
        status.refusedForDisk = spoolStatistics.refusedForDisk
        status.lastDiskShortageAt = spoolStatistics.lastDiskShortage.map { Timestamp($0).rfc3339 }
        status.waitingForRoom = spoolStatistics.waitingForRoom
        if let disk = spoolStatistics.disk {
            status.spoolDiskFree = disk.free
            status.spoolDiskSize = disk.size
            status.spoolDiskMinimumFree = disk.minimumFree
            status.spoolDiskMinimumFreeConfigured = disk.configuredMinimumFree
            status.spoolDiskReserve = disk.reserve
        }
        status.quarantinedChunks = spoolStatistics.quarantinedChunks
        status.quarantinedRecords = spoolStatistics.quarantinedRecords
        status.unreadableRecords = spoolStatistics.unreadableRecords
        status.spoolSetAside = spoolStatistics.setAside?.path
        status.spoolSetAsideReason = spoolStatistics.setAside?.reason
        status.delivered = shipping.totals.delivered
        status.deadLettered = shipping.totals.deadLettered
        status.deadLetters = spoolStatistics.deadLetters
        status.requests = shipping.totals.requests
        status.failedRequests = shipping.totals.failedRequests
        status.retriedRequests = shipping.totals.retriedRequests
        status.rejectedRequests = shipping.totals.rejectedRequests
        status.inFlight = shipping.operationsInFlight
        status.pausedUntil = shipping.pausedUntil.map { Timestamp($0).rfc3339 }
        status.pauseCause = shipping.pause?.cause.rawValue
        status.lastFailure = (shipping.pause ?? shipping.lastFailure)?.reason
        status.lastError = shipping.lastError?.reason
        status.lastErrorAt = shipping.lastError.map { Timestamp($0.at).rfc3339 }
        status.lastErrorPast = shipping.lastError.map { $0.at < shipping.lastAcceptedAt ?? .distantPast } ?? false
        status.lastAcceptedAt = shipping.lastAcceptedAt.map { Timestamp($0).rfc3339 }
        status.operatorPaused = shipping.pausedByOperator
        status.endpoints = shipping.endpoints.enumerated().map { index, endpoint in
            var endpointStatus = EndpointStatus(url: endpoint.name)
            endpointStatus.active = index == shipping.activeEndpoint
            endpointStatus.restsUntil = endpoint.restsUntil.map { Timestamp($0).rfc3339 }
            endpointStatus.failure = endpoint.rest?.reason
            endpointStatus.delivered = endpoint.totals.delivered
            endpointStatus.requests = endpoint.totals.requests
            endpointStatus.failedRequests = endpoint.totals.failedRequests
            return endpointStatus
        }
        let rate = shipper.rateStatus
        status.rateBudget = rate.budgetBytesPerSecond
        status.rateBudgetByOperator = rate.isOverridden
        status.rateEffective = rate.effectiveBytesPerSecond
        status.rateHeldDownByReceiver = rate.isHeldDownByReceiver
        status.rateRequestsPerSecond = rate.requestsPerSecond
        status.throttledSeconds = Dictionary(
            uniqueKeysWithValues: shipping.throttledSeconds.map { ($0.key.description, $0.value) })
        status.journal = journal?.statistics
        status.refusedConnections = Dictionary(
            uniqueKeysWithValues: refusals.totals.map { ($0.key.rawValue, $0.value) })
        return status
    }}
