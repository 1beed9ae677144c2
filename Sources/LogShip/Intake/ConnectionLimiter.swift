/// Decides whether a stream socket may take one more connection: at most `maximum` at once, and at most
/// `maximumPerProcess` from one process, so one runaway client can neither exhaust the daemon's file descriptors
/// nor crowd out every other producer.
///
/// A pure value: the listener holds it in a lock and closes refused connections itself.
struct ConnectionLimiter: Sendable {
    /// What to do with a new connection.
    enum Admission: Equatable, Sendable {
        case accept
        /// Close it; `report` is set when the refusal should be logged, with the refusals since the last report.
        case refuse(report: Int?)
    }

    let maximum: Int
    let maximumPerProcess: Int
    /// Refusals are logged at most once per this interval, with a count, so a flood cannot flood the log.
    let reportInterval: Duration

    private(set) var open = 0
    private var openPerProcess: [Int32: Int] = [:]
    private var unreportedRefusals = 0
    private var lastReport: ContinuousClock.Instant?

    init(maximum: Int, maximumPerProcess: Int, reportInterval: Duration = .seconds(10)) {
        precondition(maximum > 0 && maximumPerProcess > 0)
        self.maximum = maximum
        self.maximumPerProcess = maximumPerProcess
        self.reportInterval = reportInterval
    }

    /// Admits or refuses a connection from process `pid` at `now`.
    mutating func admit(pid: Int32, now: ContinuousClock.Instant) -> Admission {
        let fromProcess = openPerProcess[pid, default: 0]
        guard open < maximum, fromProcess < maximumPerProcess else {
            unreportedRefusals += 1
            if let lastReport, now - lastReport < reportInterval { return .refuse(report: nil) }
            lastReport = now
            defer { unreportedRefusals = 0 }
            return .refuse(report: unreportedRefusals)
        }
        open += 1
        openPerProcess[pid] = fromProcess + 1
        return .accept
    }

    /// Frees the place of an accepted connection from `pid` once it has closed.
    mutating func release(pid: Int32) {
        guard let fromProcess = openPerProcess[pid] else { return }
        open -= 1
        openPerProcess[pid] = fromProcess > 1 ? fromProcess - 1 : nil
    }
}
