import Testing

@testable import LogShip

/// The receiver's overload against the link's rate, with a manual clock: a receiver of a given capacity and a
/// shipper that sends as fast as the limiter lets it.
extension UploadRateLimiterTests {
    /// What a run against a receiver that takes `capacity` bytes a second came to.
    struct OverloadRun {
        var accepted: [(at: Double, bytes: Int)] = []
        var refused: [Double] = []
        var pauses = 0

        func acceptedBytes(from: Double, to: Double) -> Double {
            Double(accepted.filter { $0.at >= from && $0.at < to }.reduce(0) { $0 + $1.bytes })
        }

        func refusals(from: Double) -> Int { refused.count { $0 >= from } }
        func requests(from: Double) -> Int { refusals(from: from) + accepted.count { $0.at >= from } }
    }

    /// Two slots send requests of `requestBytes` through the limiter (no budget) for `seconds` to a receiver that
    /// takes `capacity` bytes a second: a bucket holding a second's worth, each request judged whole and refused
    /// (as a 429 would) when the bucket does not hold it.
    func overloadRun(capacity: Double, requestBytes: Int, seconds: Double) -> OverloadRun {
        var limiter = UploadRateLimiter(budget: UploadRateBudget(minimumBytesPerSecond: 1000), now: start)
        var receiver = TokenBucket(rate: capacity, capacity: capacity, level: capacity, now: start)
        var run = OverloadRun()
        let latency = Duration.milliseconds(5)
        var slotFree = [start, start]
        while let slot = slotFree.indices.min(by: { slotFree[$0] < slotFree[$1] }), slotFree[slot] < at(seconds) {
            let now = slotFree[slot]
            switch limiter.admit(.info, within: limits, now: now) {
            case .wait(let wait):
                slotFree[slot] = now + max(wait, .milliseconds(1))
            case .go(let grant):
                let answered = now + latency
                if receiver.tokens(at: now) >= Double(requestBytes) {
                    receiver.debit(Double(requestBytes), now: now)
                    run.accepted.append(((now - start).seconds, requestBytes))
                    limiter.charge(grant, UploadRateLimiter.Spending(
                        requests: 1, sentBytes: requestBytes, sentSpoolBytes: requestBytes), now: answered)
                } else {
                    run.refused.append((now - start).seconds)
                    limiter.charge(
                        grant, UploadRateLimiter.Spending(requests: 1, failedSpoolBytes: requestBytes), now: answered)
                    if !limiter.overloaded(sentAt: now, now: answered) { run.pauses += 1 }
                }
                slotFree[slot] = answered
            }
        }
        return run
    }

    @Test("sustained refusals above a capacity bring the rate under it within seconds, and keep it near it")
    func convergesUnderCapacity() {
        for (capacity, requestBytes) in [(2_400_000.0, 120_000), (2_400_000.0, 12_000), (48_000.0, 12_000)] {
            let run = overloadRun(capacity: capacity, requestBytes: requestBytes, seconds: 60)
            let label = "capacity \(Int(capacity)) B/s, requests of \(requestBytes) B"
            #expect(run.pauses == 0, "\(label): the rate answers, no pause")
            let refusedShare = Double(run.refusals(from: 10)) / Double(run.requests(from: 10))
            #expect(refusedShare < 0.05, "\(label): \(run.refusals(from: 10)) of \(run.requests(from: 10)) refused")
            let throughput = run.acceptedBytes(from: 10, to: 60) / 50
            #expect(throughput > 0.8 * capacity && throughput <= capacity * 1.02, "\(label): \(Int(throughput)) B/s")
        }
    }
}
