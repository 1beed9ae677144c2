import Synchronization

/// Counts the connections the stream sockets refuse, per reason, and decides when a refusal is logged: at most
/// once per `reportInterval` for each reason, with the count since the last report, so a flood of connections
/// cannot flood the log.
public final class ConnectionRefusals: Sendable {
    private struct State {
        var totals: [ConnectionRefusal: Int] = [:]
        var unreported: [ConnectionRefusal: Int] = [:]
        var lastReport: [ConnectionRefusal: ContinuousClock.Instant] = [:]
    }

    let reportInterval: Duration
    private let state = Mutex(State())

    init(reportInterval: Duration = .seconds(10)) {
        self.reportInterval = reportInterval
    }

    /// Counts one refusal; returns the refusals to report now (this one and those not yet reported),
    /// or `nil` when the last report of this reason is more recent than `reportInterval`.
    func count(_ reason: ConnectionRefusal) -> Int? {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.totals[reason, default: 0] += 1
            state.unreported[reason, default: 0] += 1
            if let last = state.lastReport[reason], now - last < reportInterval { return nil }
            state.lastReport[reason] = now
            return state.unreported.removeValue(forKey: reason)
        }
    }

    /// Refusals since start, per reason.
    var totals: [ConnectionRefusal: Int] { state.withLock { $0.totals } }
}
