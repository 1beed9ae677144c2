import Testing

@testable import LogShip

/// The limiter's decisions with a manual clock.
struct UploadRateLimiterTests {
    let start = ContinuousClock.now
    let limits = BatchLimits(maxRecords: 1000, maxBytes: 1 << 20)

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

    func grant(_ admission: UploadRateLimiter.Admission) -> UploadRateLimiter.Grant? {
        if case .go(let grant) = admission { grant } else { nil }
    }

    func wait(_ admission: UploadRateLimiter.Admission) -> Duration? {
        if case .wait(let wait) = admission { wait } else { nil }
    }

    /// Whether a rate is `expected` bytes a second, within a hundredth of a byte.
    func near(_ rate: Double?, _ expected: Double) -> Bool {
        rate.map { abs($0 - expected) < 0.01 } ?? false
    }

    @Test("without a budget every claim goes at once with the batch limits")
    func unlimited() {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(), now: at(0))
        let admission = limiter.admit(.debug, within: limits, now: at(0))
        #expect(grant(admission)?.limits == limits)
        #expect(limiter.effectiveBytesPerSecond(at: at(0)) == nil)
    }

    @Test("a budgeted class waits for a request's worth, then claims what the tokens allow")
    func sizedToTokens() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        // A request's worth: a quarter second of the rate.
        var admission = limiter.admit(.info, within: limits, now: at(0))
        #expect(wait(admission) == .milliseconds(250))
        admission = limiter.admit(.info, within: limits, now: at(0.6))
        let granted = try #require(grant(admission))
        #expect(granted.limits.maxBytes == 600)
        #expect(granted.limits.maxRecords == limits.maxRecords)
        limiter.charge(
            granted, UploadRateLimiter.Spending(requests: 1, sentBytes: 600, sentSpoolBytes: 600), now: at(0.6))
        admission = limiter.admit(.info, within: limits, now: at(0.6))
        #expect(wait(admission) == .milliseconds(250))
    }

    @Test("after a quiet spell the burst goes at once, and no more")
    func burst() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000, burstSeconds: 2), now: at(0))
        let admission = limiter.admit(.info, within: limits, now: at(60))
        let granted = try #require(grant(admission))
        #expect(granted.limits.maxBytes == 2000)
    }

    @Test("a claim is sized in spooled bytes by what the last requests' bodies weighed against them")
    func wireRatio() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        var admission = limiter.admit(.info, within: limits, now: at(1))
        let first = try #require(grant(admission))
        // The body weighed twice the spooled bytes (a JSON format, say): owed is the difference.
        limiter.charge(
            first, UploadRateLimiter.Spending(requests: 1, sentBytes: 2000, sentSpoolBytes: 1000), now: at(1))
        #expect(abs(limiter.wireBytesPerSpoolByte - 1.3) < 1e-9)
        admission = limiter.admit(.info, within: limits, now: at(1))
        #expect(wait(admission) == .milliseconds(1250), "the extra 1000 is a debt")
        admission = limiter.admit(.info, within: limits, now: at(3.25))
        let second = try #require(grant(admission))
        #expect(second.limits.maxBytes == Int(1000 / 1.3))
    }

    @Test("an exempt class never waits, and what it sends is spent from the budget")
    func exempt() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        var admission = limiter.admit(.crash, within: limits, now: at(0))
        let crash = try #require(grant(admission))
        #expect(crash.limits == limits)
        limiter.charge(
            crash, UploadRateLimiter.Spending(requests: 1, sentBytes: 3000, sentSpoolBytes: 3000), now: at(0))
        admission = limiter.admit(.info, within: limits, now: at(0))
        #expect(wait(admission) == .milliseconds(3250))
        admission = limiter.admit(.crash, within: limits, now: at(0))
        #expect(grant(admission) != nil, "even in debt")
    }

    @Test("a less urgent class does not take the tokens a more urgent one was told to wait for")
    func urgentFirst() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        var admission = limiter.admit(.error, within: limits, now: at(0))
        #expect(wait(admission) == .milliseconds(250))
        // The chatter comes back first, at the moment the error's tokens are there: it waits past the error.
        admission = limiter.admit(.debug, within: limits, now: at(0.25))
        let chatterWait = try #require(wait(admission))
        #expect(chatterWait > .zero)
        admission = limiter.admit(.error, within: limits, now: at(0.25))
        #expect(grant(admission) != nil)
        admission = limiter.admit(.debug, within: limits, now: at(0.25) + chatterWait)
        #expect(wait(admission) != nil, "the error took them")
        // The chatter's timer may fire a little after the error's wait ended, before the error claims: still held.
        var late = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        _ = late.admit(.error, within: limits, now: at(0))
        admission = late.admit(.debug, within: limits, now: at(0.28))
        #expect(wait(admission) != nil, "30 ms after the error was due")
        // An urgent class that never came back does not hold the rest for ever.
        var stale = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        _ = stale.admit(.error, within: limits, now: at(0))
        admission = stale.admit(.debug, within: limits, now: at(1))
        #expect(grant(admission) != nil)
    }

    @Test("a request budget spaces claims even when bytes are plenty")
    func requestBudget() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(requestsPerSecond: 4), now: at(0))
        var admission = limiter.admit(.info, within: limits, now: at(0))
        #expect(wait(admission) == .milliseconds(250))
        admission = limiter.admit(.info, within: limits, now: at(0.25))
        let granted = try #require(grant(admission))
        limiter.charge(
            granted, UploadRateLimiter.Spending(requests: 3, sentBytes: 10, sentSpoolBytes: 10), now: at(0.25))
        admission = limiter.admit(.info, within: limits, now: at(0.25))
        #expect(wait(admission) == .milliseconds(750), "isolation requests count too")
    }

    @Test("logctl throttle off lifts the request budget too, until a reload; a byte budget set by an operator keeps it")
    func offLiftsRequestBudget() throws {
        var limiter = UploadRateLimiter(
            budget: UploadRateBudget(bytesPerSecond: 100_000, requestsPerSecond: 1), now: at(0))
        limiter.setOverride(.bytesPerSecond(200_000), now: at(0))
        #expect(limiter.requestsPerSecond == 1)
        limiter.setOverride(.off, now: at(0))
        #expect(limiter.requestsPerSecond == nil)
        for _ in 0..<3 {
            let granted = try #require(grant(limiter.admit(.info, within: limits, now: at(0))), "no request budget")
            limiter.charge(
                granted, UploadRateLimiter.Spending(requests: 1, sentBytes: 100, sentSpoolBytes: 100), now: at(0))
        }
        limiter.update(UploadRateBudget(requestsPerSecond: 1), now: at(1))
        #expect(limiter.requestsPerSecond == 1)
        #expect(
            wait(limiter.admit(.info, within: limits, now: at(1))) != nil, "the reloaded request budget starts empty")
    }

    @Test("a grant keeps only what its claim took; the rest is free for the other slot at once")
    func shrink() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        var admission = limiter.admit(.info, within: limits, now: at(1))
        var granted = try #require(grant(admission))
        limiter.shrink(&granted, toSpoolBytes: 300, now: at(1))
        #expect(granted.reservedBytes == 300)
        admission = limiter.admit(.warning, within: limits, now: at(1))
        #expect(grant(admission)?.limits.maxBytes == 700)
    }

    @Test("an overload empties the bucket: the next request waits for the lower rate, not one per round trip")
    func overloadEmptiesTheBucket() throws {
        var limiter = UploadRateLimiter(
            budget: UploadRateBudget(bytesPerSecond: 100_000, minimumBytesPerSecond: 1000), now: at(0))
        let granted = try #require(grant(limiter.admit(.info, within: limits, now: at(1.5))))
        limiter.charge(
            granted, UploadRateLimiter.Spending(requests: 1, sentBytes: 80_000, sentSpoolBytes: 80_000), now: at(1.5))
        #expect(limiter.overloaded(sentAt: at(2), now: at(2.05)) == .decreased)
        #expect(near(limiter.effectiveBytesPerSecond(at: at(2.05)), 64_000), "0.8 of the 80 000 B/s accepted")
        let admission = limiter.admit(.info, within: limits, now: at(2.05))
        #expect(wait(admission) == .milliseconds(250), "a quarter second of the lower rate")
        #expect(limiter.overloaded(sentAt: at(2), now: at(2.2)) == .answeredAlready, "sent before the decrease")
        let again = try #require(wait(limiter.admit(.info, within: limits, now: at(2.2))))
        #expect(again < .milliseconds(150), "the bucket was not emptied again: \(again)")
    }

    @Test("an operator's budget below the floor is the floor: it is not lowered below itself, and a 429 pauses")
    func floorFollowsAnOverride() {
        var limiter = UploadRateLimiter(
            budget: UploadRateBudget(bytesPerSecond: 100_000, minimumBytesPerSecond: 16_384), now: at(0))
        limiter.setOverride(.bytesPerSecond(12_000), now: at(0))
        #expect(limiter.overloaded(sentAt: at(0), now: at(0.1)) == .atFloor)
        #expect(limiter.effectiveBytesPerSecond(at: at(0.1)) == 12_000)
        limiter.setOverride(.bytesPerSecond(40_000), now: at(1))
        #expect(limiter.overloaded(sentAt: at(1), now: at(1.1)) == .decreased)
        #expect(
            limiter.effectiveBytesPerSecond(at: at(1.1)) == 16_384,
            "nothing accepted to measure: 0.8 of half, held at the floor")
    }

    @Test("an unused grant gives its tokens back")
    func unusedGrant() throws {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        var admission = limiter.admit(.info, within: limits, now: at(1))
        let granted = try #require(grant(admission))
        limiter.charge(granted, UploadRateLimiter.Spending(), now: at(1))
        admission = limiter.admit(.info, within: limits, now: at(1))
        #expect(grant(admission)?.limits.maxBytes == 1000)
    }

    @Test("""
        an overload lowers the rate in force to a little under what was accepted; it grows back to it, stays near it, \
        then grows on to the budget, or without one to what was sent, and lets go
        """)
    func overload() throws {
        var limiter = UploadRateLimiter(
            budget: UploadRateBudget(bytesPerSecond: 100_000, minimumBytesPerSecond: 1000), now: at(0))
        let granted = try #require(grant(limiter.admit(.info, within: limits, now: at(1))))
        limiter.charge(
            granted, UploadRateLimiter.Spending(requests: 1, sentBytes: 60_000, sentSpoolBytes: 60_000), now: at(1))
        #expect(limiter.overloaded(sentAt: at(1), now: at(1.1)) == .decreased)
        #expect(near(limiter.effectiveBytesPerSecond(at: at(1.1)), 48_000))
        #expect(limiter.isHeldDownByReceiver(at: at(1.1)))
        let plateau = try #require(limiter.effectiveBytesPerSecond(at: at(7.1)))
        #expect(abs(plateau - 60_000) < 1, "back at what was accepted after six seconds")
        let nearIt = try #require(limiter.effectiveBytesPerSecond(at: at(9.1)))
        #expect(nearIt < 60_500, "and near it for a while: \(nearIt) B/s")
        #expect(limiter.isHeldDownByReceiver(at: at(16)))
        #expect(!limiter.isHeldDownByReceiver(at: at(16.1)), "back at the budget")

        var open = UploadRateLimiter(budget: UploadRateBudget(minimumBytesPerSecond: 1000), now: at(0))
        let all = try #require(grant(open.admit(.info, within: limits, now: at(0))))
        open.charge(
            all, UploadRateLimiter.Spending(requests: 1, sentBytes: 39_000, sentSpoolBytes: 39_000), now: at(0.5))
        open.charge(all, UploadRateLimiter.Spending(requests: 1, failedSpoolBytes: 40_000), now: at(0.6))
        #expect(open.overloaded(sentAt: at(0.6), now: at(0.7)) == .decreased)
        #expect(near(open.effectiveBytesPerSecond(at: at(0.7)), 31_200), "0.8 of 39 000 B/s accepted")
        let sized = try #require(grant(open.admit(.info, within: limits, now: at(1))))
        #expect(abs(sized.limits.maxBytes - 9_360) <= 1, "what 0.3 s of the lower rate allows, not a whole batch")
        #expect(open.effectiveBytesPerSecond(at: at(17)) != nil)
        #expect(open.effectiveBytesPerSecond(at: at(17.1)) == nil, "79 000 B/s were sent: lifted once it grew there")
    }

    @Test("logctl throttle overrides the budget until a reload, which also takes a new budget at once")
    func overrideAndReload() {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: 1000), now: at(0))
        limiter.setOverride(.bytesPerSecond(4000), now: at(0))
        #expect(limiter.effectiveBytesPerSecond(at: at(0)) == 4000)
        limiter.setOverride(.off, now: at(0))
        #expect(limiter.effectiveBytesPerSecond(at: at(0)) == nil)
        let admission = limiter.admit(.debug, within: limits, now: at(0))
        #expect(grant(admission)?.limits == limits)
        limiter.update(UploadRateBudget(bytesPerSecond: 2000), now: at(1))
        #expect(limiter.override == nil)
        #expect(limiter.effectiveBytesPerSecond(at: at(1)) == 2000)
    }

    /// A backlog drained through the limiter for `seconds`, requests taking `latency` each on one of two slots:
    /// when each request left (seconds from the start), and its bytes.
    func drain(budget: Int, seconds: Double, latency: Duration = .milliseconds(3)) -> [(at: Double, bytes: Int)] {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(bytesPerSecond: budget), now: start)
        let limits = BatchLimits(maxRecords: 500, maxBytes: 1 << 20)
        var sent: [(at: Double, bytes: Int)] = []
        // Kept as instants, not seconds in a Double: a wait of a few attoseconds must still move time on.
        var slotFree = [start, start]
        while let slot = slotFree.indices.min(by: { slotFree[$0] < slotFree[$1] }), slotFree[slot] < at(seconds) {
            let now = slotFree[slot]
            switch limiter.admit(.info, within: limits, now: now) {
            case .wait(let wait):
                slotFree[slot] = now + wait
            case .go(let grant):
                // Records of 200 bytes: the claim holds whole records, at least one.
                let bytes = max(200, grant.limits.maxBytes / 200 * 200)
                sent.append(((now - start).seconds, bytes))
                limiter.charge(
                    grant, UploadRateLimiter.Spending(requests: 1, sentBytes: bytes, sentSpoolBytes: bytes),
                    now: now + latency)
                slotFree[slot] = now + latency
            }
        }
        return sent
    }

    /// The bytes in every window of `length` seconds, one starting every tenth of a second.
    func windows(_ sent: [(at: Double, bytes: Int)], length: Double, until: Double) -> [Double] {
        stride(from: 0.0, through: until - length, by: 0.1).map { from in
            Double(sent.filter { $0.at >= from && $0.at < from + length }.reduce(0) { $0 + $1.bytes })
        }
    }

    @Test("a backlog leaves within 20% of the budget in every 2-second window and 5% in every 10-second one")
    func windowsHoldTheBudget() {
        for budget in [10_000, 1_000_000, 50_000_000] {
            let sent = drain(budget: budget, seconds: 30)
            for (length, tolerance) in [(2.0, 0.2), (10.0, 0.05)] {
                let worst = windows(sent, length: length, until: 30)
                    .map { abs($0 / (Double(budget) * length) - 1) }.max()
                #expect(
                    (worst ?? 1) <= tolerance, "budget \(budget) B/s, \(length) s windows: worst off by \(worst ?? 1)")
            }
        }
    }
}
