/// What was spent over a recent window, in tenths of a second: the same few bytes of memory and the same work per
/// request whether requests come one a second or sixty thousand (one-line requests).
struct RecentSpending: Hashable, Sendable {
    private static let slot = Duration.milliseconds(100)

    private let slots: Int
    /// Bytes spent in each tenth of a second, the tenth numbered `n` in slot `n % slots`.
    private var bytes: [Double]
    /// The first instant seen: tenths are counted from it.
    private var origin: ContinuousClock.Instant?
    /// The newest tenth a slot holds.
    private var newest = 0

    /// - Parameter window: How far back the total reaches, in whole tenths of a second; one second by default.
    init(window: Duration = .seconds(1)) {
        slots = max(1, Int(window / Self.slot))
        bytes = Array(repeating: 0, count: slots)
    }

    /// Adds `spent` bytes at `now`.
    mutating func add(_ spent: Double, at now: ContinuousClock.Instant) {
        if origin == nil { origin = now }
        let current = tenth(of: now)
        if current > newest {
            // The slots of the tenths between the newest and now start again from nothing.
            for skipped in (newest + 1)...min(current, newest + slots) { bytes[skipped % slots] = 0 }
            newest = current
        }
        bytes[max(current, newest - slots + 1) % slots] += spent
    }

    /// What was spent in the window up to `now`, to the tenth.
    func total(at now: ContinuousClock.Instant) -> Double {
        guard let range = tenthsInWindow(at: now) else { return 0 }
        return range.reduce(0) { $0 + bytes[$1 % slots] }
    }

    /// What was spent per second over the window up to `now`: the total over the time since the window's first
    /// spending, or one second if that is shorter (a burst of a tenth is not taken for ten times its rate).
    func rate(at now: ContinuousClock.Instant) -> Double {
        guard let range = tenthsInWindow(at: now), let origin,
            let first = range.first(where: { bytes[$0 % slots] > 0 })
        else { return 0 }
        let since = origin + Self.slot * first
        return total(at: now) / max(1, (now - since).seconds)
    }

    private func tenthsInWindow(at now: ContinuousClock.Instant) -> ClosedRange<Int>? {
        let oldest = max(0, tenth(of: now) - slots + 1, newest - slots + 1)
        return oldest <= newest ? oldest...newest : nil
    }

    private func tenth(of instant: ContinuousClock.Instant) -> Int {
        guard let origin else { return 0 }
        return Int(max(0, (instant - origin) / Self.slot))
    }
}
