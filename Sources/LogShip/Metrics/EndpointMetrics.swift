import Prometheus
import Synchronization

/// The series of each endpoint of `upload.url`, labelled `endpoint` with its URL: what it was sent, and whether
/// delivery goes to it. Made as endpoints appear in the status (a reload may rename one); a series whose endpoint
/// is gone keeps its counts and reads 0 in its gauges.
final class EndpointMetrics: Sendable {
    private struct Series {
        var counters: [(counter: Counter, total: @Sendable (EndpointStatus) -> Int, exported: Int)]
        var gauges: [(gauge: Gauge, value: @Sendable (EndpointStatus) -> Double)]
    }

    private static let totals: [(String, String, @Sendable (EndpointStatus) -> Int)] = [
        ("logshipd_endpoint_requests_total", "Upload requests sent to the endpoint.", { $0.requests }),
        ("logshipd_endpoint_requests_failed_total", "Upload requests the endpoint did not accept.", {
            $0.failedRequests
        }),
        ("logshipd_endpoint_records_delivered_total", "Records the endpoint accepted.", { $0.delivered }),
    ]

    private static let values: [(String, String, @Sendable (EndpointStatus) -> Double)] = [
        ("logshipd_endpoint_active", "1 for the endpoint delivery goes to.", { $0.active ? 1 : 0 }),
        ("logshipd_endpoint_resting", "1 while delivery has moved away from the endpoint after a failure.", {
            $0.restsUntil == nil ? 0 : 1
        }),
    ]

    private let registry: PrometheusCollectorRegistry
    /// By URL.
    private let series = Mutex<[String: Series]>([:])

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// Brings every endpoint's series to `endpoints`.
    func update(_ endpoints: [EndpointStatus]) {
        series.withLock { series in
            for endpoint in endpoints where series[endpoint.url] == nil {
                series[endpoint.url] = makeSeries(endpoint.url)
            }
            for (url, var one) in series {
                guard let endpoint = endpoints.first(where: { $0.url == url }) else {
                    for (gauge, _) in one.gauges { gauge.set(Double(0)) }
                    continue
                }
                for index in one.counters.indices {
                    let value = one.counters[index].total(endpoint)
                    if value > one.counters[index].exported {
                        one.counters[index].counter.increment(by: Int64(value - one.counters[index].exported))
                        one.counters[index].exported = value
                    }
                }
                for (gauge, value) in one.gauges { gauge.set(value(endpoint)) }
                series[url] = one
            }
        }
    }

    private func makeSeries(_ url: String) -> Series {
        let labels = [("endpoint", url)]
        return Series(
            counters: Self.totals.map { name, help, total in
                (registry.makeCounter(descriptor: Self.metric(name, help), labels: labels), total, 0)
            },
            gauges: Self.values.map { name, help, value in
                (registry.makeGauge(descriptor: Self.metric(name, help), labels: labels), value)
            })
    }

    /// A metric whose whole name is `name`, as ``MetricsExporter`` names its own.
    private static func metric(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}
