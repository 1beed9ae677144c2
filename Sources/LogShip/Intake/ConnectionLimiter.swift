/// Decides whether a stream socket may take one more connection: at most `maximum` at once, and at most
/// `maximumPerUser` from one user (uid), so that one user's processes, however many it forks, can neither exhaust
/// the daemon's file descriptors nor crowd out every other producer.
///
/// On the control socket a few places are kept for operators (root and logshipd's own user): other users are
/// refused once only `operatorReserve` places are left, and an operator may hold that many more than the per-user
/// cap, so that `logctl status` still gets in while another user holds every place it may.
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
    let maximumPerUser: Int
    let operatorReserve: Int
    let operators: Set<UInt32>
    /// Refusals are logged at most once per this interval, with a count, so a flood cannot flood the log.
    let reportInterval: Duration

    private(set) var open = 0
    private var openPerUser: [UInt32: Int] = [:]
    private var unreportedRefusals = 0
    private var lastReport: ContinuousClock.Instant?

    /// - Parameters:
    ///   - operatorReserve: Places only `operators` may take; 0 treats every user alike.
    init(
        maximum: Int, maximumPerUser: Int, operatorReserve: Int = 0, operators: Set<UInt32> = [],
        reportInterval: Duration = .seconds(10)
    ) {
        precondition(maximum > 0 && maximumPerUser > 0 && operatorReserve >= 0)
        self.maximum = maximum
        self.maximumPerUser = maximumPerUser
        self.operatorReserve = min(operatorReserve, maximum - 1)
        self.operators = operators
        self.reportInterval = reportInterval
    }

    /// Admits or refuses a connection from user `uid` at `now`.
    mutating func admit(uid: UInt32, now: ContinuousClock.Instant) -> Admission {
        let fromUser = openPerUser[uid, default: 0]
        let isOperator = operators.contains(uid)
        let places = isOperator ? maximum : maximum - operatorReserve
        let userPlaces = isOperator ? maximumPerUser + operatorReserve : maximumPerUser
        guard open < places, fromUser < userPlaces else {
            unreportedRefusals += 1
            if let lastReport, now - lastReport < reportInterval { return .refuse(report: nil) }
            lastReport = now
            defer { unreportedRefusals = 0 }
            return .refuse(report: unreportedRefusals)
        }
        open += 1
        openPerUser[uid] = fromUser + 1
        return .accept
    }

    /// Frees the place of an accepted connection from `uid` once it has closed.
    mutating func release(uid: UInt32) {
        guard let fromUser = openPerUser[uid] else { return }
        open -= 1
        openPerUser[uid] = fromUser > 1 ? fromUser - 1 : nil
    }
}
