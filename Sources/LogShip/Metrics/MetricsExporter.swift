import Prometheus
import Synchronization

/// logshipd's metrics for Prometheus: counters and gauges set from the daemon's status at each scrape, so that
/// they always equal what `logctl status --json` says, and a histogram of upload request durations. The request
/// and record counts are the link's, whichever endpoint took them; ``EndpointMetrics`` has each endpoint's.
final class MetricsExporter: Sendable {
    /// Upload durations: from a fast loopback answer to `upload.timeout`'s usual range.
    static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
    ]

    private let registry: PrometheusCollectorRegistry
    private let requestDurations: DurationHistogram
    /// Totals since start, exported as counters; each scrape adds what grew since the last.
    private let counters: [(counter: Counter, total: @Sendable (DaemonStatus) -> Int)]
    private let exported: Mutex<[Int]>
    private let gauges: [(gauge: Gauge, value: @Sendable (DaemonStatus) -> Double)]
    /// Seconds each class waited for the upload budget, by class name: counters of seconds, which grow by fractions.
    private let throttled: [(counter: Counter, className: String)]
    private let exportedThrottled: Mutex<[Double]>
    private let endpoints: EndpointMetrics

    init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        endpoints = EndpointMetrics(registry: registry)
        requestDurations = registry.makeDurationHistogram(
            descriptor: Self.metric(
                "logshipd_upload_request_duration_seconds", "How long upload requests took, answered or failed."),
            buckets: Self.durationBuckets)
        let totals: [(String, String, @Sendable (DaemonStatus) -> Int)] = [
            ("logshipd_records_received_total", "Records received from all inputs.", { $0.received }),
            ("logshipd_records_truncated_total", "Records cut at the size limit.", { $0.truncated }),
            ("logshipd_frames_blank_total", "Frames with nothing but whitespace, dropped.", { $0.blank }),
            ("logshipd_records_demoted_total", "Crash claims beyond their sender's crash budget, stored as errors.", {
                $0.demoted
            }),
            ("logshipd_records_delivered_total", "Records the remote accepted.", { $0.delivered }),
            ("logshipd_records_dead_lettered_total", "Records moved to the dead-letter table.", { $0.deadLettered }),
            ("logshipd_records_evicted_total", "Records evicted to make room.", { $0.evicted }),
            ("logshipd_records_refused_total", "Records the spool refused.", { $0.refused }),
            ("logshipd_records_evicted_for_disk_total", "Records evicted because the spool's disk was short.", {
                $0.evictedForDisk
            }),
            ("logshipd_records_refused_for_disk_total", "Records refused because the spool's disk was short.", {
                $0.refusedForDisk
            }),
            ("logshipd_spool_chunks_quarantined_total", "Damaged spool chunks taken out of the spool.", {
                $0.quarantinedChunks
            }),
            ("logshipd_records_quarantined_total", "Records of damaged spool chunks, dead-lettered or lost.", {
                $0.quarantinedRecords
            }),
            ("logshipd_records_unreadable_total", "Records of damaged spool chunks that could not be read.", {
                $0.unreadableRecords
            }),
            ("logshipd_requests_total", "Upload requests sent.", { $0.requests }),
            ("logshipd_requests_failed_total", "Upload requests the remote did not accept: retried plus rejected.", {
                $0.failedRequests
            }),
            ("logshipd_requests_retried_total", "Failed upload requests whose records went back whole, not at fault.", {
                $0.retriedRequests
            }),
            ("logshipd_requests_rejected_total", "Failed upload requests refused for the records they held (split).", {
                $0.rejectedRequests
            }),
        ]
        let refused = ConnectionRefusal.allCases.map { reason in
            (
                registry.makeCounter(
                    descriptor: Self.metric(
                        "logshipd_connections_refused_total", "Connections the stream sockets refused, per reason."),
                    labels: [("reason", reason.rawValue)]),
                { @Sendable (status: DaemonStatus) in status.refusedConnections[reason.rawValue] ?? 0 }
            )
        }
        counters = totals.map { name, help, total in
            (registry.makeCounter(descriptor: Self.metric(name, help)), total)
        } + refused
        exported = Mutex(Array(repeating: 0, count: counters.count))

        var gauges: [(Gauge, @Sendable (DaemonStatus) -> Double)] = []
        var throttled: [(Counter, String)] = []
        for priority in PriorityClass.mostUrgentFirst {
            let name = priority.description
            gauges.append((
                registry.makeGauge(
                    descriptor: Self.metric("logshipd_records_pending", "Unclaimed records in the spool."),
                    labels: [("class", name)]),
                { Double($0.pending[name] ?? 0) }))
            gauges.append((
                registry.makeGauge(
                    descriptor: Self.metric(
                        "logshipd_oldest_pending_age_seconds", "Age of the oldest record of the class in the spool."),
                    labels: [("class", name)]),
                { $0.oldestPendingAgeSeconds[name] ?? 0 }))
            throttled.append((
                registry.makeCounter(
                    descriptor: Self.metric(
                        "logshipd_upload_throttled_seconds_total", "Seconds the class waited for the upload budget."),
                    labels: [("class", name)]),
                name))
        }
        let singles: [(String, String, @Sendable (DaemonStatus) -> Double)] = [
            ("logshipd_records_claimed", "Records claimed by requests in flight.", { Double($0.claimed) }),
            ("logshipd_requests_in_flight", "Upload requests open now.", { Double($0.inFlight) }),
            ("logshipd_dead_letters", "Records in the dead-letter table.", { Double($0.deadLetters) }),
            ("logshipd_spool_bytes", "Bytes the spool holds against its budget.", { Double($0.spoolBytes) }),
            ("logshipd_spool_budget_bytes", "The spool's budget (spool.max_bytes).", { Double($0.spoolBudget) }),
            ("logshipd_records_waiting_for_room", "Records from the ingest sockets waiting for room in the spool.", {
                Double($0.waitingForRoom)
            }),
            ("logshipd_spool_disk_free_bytes", "Bytes free on the spool's filesystem.", {
                Double($0.spoolDiskFree ?? 0)
            }),
            ("logshipd_spool_disk_size_bytes", "The size of the spool's filesystem.", {
                Double($0.spoolDiskSize ?? 0)
            }),
            ("logshipd_spool_disk_min_free_bytes", "What the spool leaves free on its filesystem.", {
                Double($0.spoolDiskMinimumFree ?? 0)
            }),
            ("logshipd_spool_set_aside", "1 when a damaged spool file was set aside at start for a fresh one.", {
                $0.spoolSetAside == nil ? 0 : 1
            }),
            ("logshipd_delivery_paused", "1 while delivery is paused after a failure.", {
                $0.pausedUntil == nil ? 0 : 1
            }),
            ("logshipd_uploads_paused_by_operator", "1 while logctl pause holds uploads.", {
                $0.operatorPaused ? 1 : 0
            }),
            ("logshipd_upload_rate_budget_bytes_per_second", "The upload budget in force; 0 when there is none.", {
                Double($0.rateBudget ?? 0)
            }),
            ("logshipd_upload_rate_effective_bytes_per_second",
                "The rate uploads may go at now: the budget, or less while the receiver is overloaded; "
                    + "0 when unlimited.", {
                    Double($0.rateEffective ?? 0)
                }),
            ("logshipd_journal_behind_seconds", "How far the journal reader is behind the newest entry.", {
                $0.journal?.behindSeconds ?? 0
            }),
            ("logshipd_uptime_seconds", "Seconds since logshipd started.", { $0.uptimeSeconds }),
        ]
        for (name, help, value) in singles {
            gauges.append((registry.makeGauge(descriptor: Self.metric(name, help)), value))
        }
        self.gauges = gauges
        self.throttled = throttled
        exportedThrottled = Mutex(Array(repeating: 0, count: throttled.count))
    }

    /// A metric whose whole name, unit suffix included, is `name`: the descriptor joins its non-empty parts.
    private static func metric(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// Records one upload request's duration.
    func recordRequest(_ duration: Duration) {
        requestDurations.record(duration)
    }

    /// The exposition for `status`, in Prometheus text format.
    func exposition(for status: DaemonStatus) -> [UInt8] {
        exported.withLock { exported in
            for (index, (counter, total)) in counters.enumerated() {
                let value = total(status)
                if value > exported[index] { counter.increment(by: Int64(value - exported[index])) }
                exported[index] = max(exported[index], value)
            }
        }
        exportedThrottled.withLock { exported in
            for (index, (counter, className)) in throttled.enumerated() {
                let value = status.throttledSeconds[className] ?? 0
                if value > exported[index] { counter.increment(by: value - exported[index]) }
                exported[index] = max(exported[index], value)
            }
        }
        for (gauge, value) in gauges { gauge.set(value(status)) }
        endpoints.update(status.endpoints)
        return registry.emitToBuffer()
    }
}
