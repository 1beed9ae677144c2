/// How many crash claims each sender may make: a token bucket per uid, refilled at ``perSecond`` up to ``burst``.
///
/// A sender's own claim to the crash lane (`{"priority":"crash"}` on a socket, `logctl send --priority crash`)
/// is what lets its record overtake everything else, so one user's flood of claims must not put its records ahead
/// of another user's crash report. A claim within the budget keeps the crash class; beyond it the record is
/// stored as an error (see ``EncodedRecord/demotingCrashClaim()``). Root's claims, and crash reports the host
/// vouches for (the journal's coredumps, kernel faults, PID 1's unit failures), are never counted.
///
/// A pure value with an injected clock: ``RecordIntake`` holds it in a lock.
struct CrashBudget: Sendable {
    struct Settings: Hashable, Sendable {
        /// Claims a sender regains per second (`intake.crash_budget.per_second`).
        var perSecond: Double
        /// Claims a sender may make at once (`intake.crash_budget.burst`).
        var burst: Double

        static let `default` = Settings(DaemonConfiguration.Intake())

        init(perSecond: Double, burst: Double) {
            self.perSecond = perSecond
            self.burst = burst
        }

        init(_ intake: DaemonConfiguration.Intake) {
            self.init(perSecond: intake.crashBudgetPerSecond, burst: Double(intake.crashBudgetBurst))
        }
    }

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    /// Buckets are forgotten once full again, but only when this many are held: how many users a host has bounds
    /// the table, and pruning now and then keeps it small.
    private static let pruneAbove = 1024

    var settings: Settings
    private var buckets: [UInt32: Bucket] = [:]

    init(_ settings: Settings) {
        self.settings = settings
    }

    /// Whether a crash claim by `uid` at `now` is within its budget; spends one claim if so.
    mutating func admit(uid: UInt32, now: ContinuousClock.Instant) -> Bool {
        guard uid != 0 else { return true }
        var bucket = refilled(buckets[uid] ?? Bucket(tokens: settings.burst, updated: now), now: now)
        let admitted = bucket.tokens >= 1
        if admitted { bucket.tokens -= 1 }
        buckets[uid] = bucket
        if buckets.count > Self.pruneAbove {
            buckets = buckets.filter { refilled($0.value, now: now).tokens < settings.burst }
        }
        return admitted
    }

    private func refilled(_ bucket: Bucket, now: ContinuousClock.Instant) -> Bucket {
        let elapsed = max(0, (now - bucket.updated).seconds)
        return Bucket(tokens: min(settings.burst, bucket.tokens + elapsed * settings.perSecond), updated: now)
    }
}
