/// What was spent over the last second, in tenths of a second: the same few bytes of memory and the same work per
/// request whether requests come one a second or sixty thousand (one-line requests).
struct RecentSpending {
    private static let slots = 10
    private static let slot = Duration.milliseconds(100)

    /// Bytes spent in each tenth of a second, the tenth numbered `n` in slot `n % slots`.
    private var bytes = [Double](repeating: 0, count: slots)
    /// The first instant seen: tenths are counted from it.
    private var origin: ContinuousClock.Instant?
    /// The newest tenth a slot holds.
    private var newest = 0

    /// Adds `spent` bytes at `now`.
    mutating func add(_ spent: Double, at now: ContinuousClock.Instant) {
        if origin == nil { origin = now }
        let current = tenth(of: now)
        if current > newest {
            // The slots of the tenths between the newest and now start again from nothing.
            for skipped in (newest + 1)...min(current, newest + Self.slots) { bytes[skipped % Self.slots] = 0 }
            newest = current
        }
        bytes[max(current, newest - Self.slots + 1) % Self.slots] += spent
    }

    /// What was spent in the second up to `now`, to the tenth.
    func total(at now: ContinuousClock.Instant) -> Double {
        let current = tenth(of: now)
        let oldest = max(0, current - Self.slots + 1, newest - Self.slots + 1)
        guard oldest <= newest else { return 0 }
        return (oldest...newest).reduce(0) { $0 + bytes[$1 % Self.slots] }
    }

    private func tenth(of instant: ContinuousClock.Instant) -> Int {
        guard let origin else { return 0 }
        return Int(max(0, (instant - origin) / Self.slot))
    }
}
