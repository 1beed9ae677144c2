import Testing

@testable import LogShip

/// The receiver's overload against the link's rate, with a manual clock: a receiver of a given capacity and
/// shippers that send as fast as their limiters let them.
extension UploadRateLimiterTests {
    /// What a run against a receiver that takes `capacity` bytes a second came to.
    struct OverloadRun {
        var accepted: [(at: Double, bytes: Int)] = []
        var refused: [Double] = []
        var pauses = 0
        /// When the last of every backlog was taken; `nil` when some was left at the end.
        var drained: Double?

        func acceptedBytes(from: Double, to: Double) -> Double {
            Double(accepted.filter { $0.at >= from && $0.at < to }.reduce(0) { $0 + $1.bytes })
        }

        func refusals(from: Double) -> Int { refused.count { $0 >= from } }
        func requests(from: Double) -> Int { refusals(from: from) + accepted.count { $0.at >= from } }
    }

    /// `hosts` shippers, each with two slots, send requests of up to `requestBytes` (less when the grant says so)
    /// through their limiters (no budget) for `seconds` to a receiver that takes `capacity` bytes a second: a
    /// bucket holding a second's worth, each request judged whole and refused (as a 429 would) when the bucket does
    /// not hold it. Each host has `backlog` bytes to send, or no end; the hosts start `stagger` seconds apart.
    func overloadRun(
        capacity: Double, requestBytes: Int, seconds: Double, hosts: Int = 1, backlog: Int = .max, stagger: Double = 0
    ) -> OverloadRun {
        var limiters = (0..<hosts).map { host in
            UploadRateLimiter(budget: UploadRateBudget(minimumBytesPerSecond: 1000), now: at(Double(host) * stagger))
        }
        var unsent = Array(repeating: backlog, count: hosts)
        var receiver = TokenBucket(rate: capacity, capacity: capacity, level: capacity, now: start)
        var run = OverloadRun()
        let latency = Duration.milliseconds(5)
        var slotFree = (0..<hosts).flatMap { host in Array(repeating: at(Double(host) * stagger), count: 2) }
        while let slot = slotFree.indices.min(by: { slotFree[$0] < slotFree[$1] }), slotFree[slot] < at(seconds) {
            let (host, now) = (slot / 2, slotFree[slot])
            guard unsent[host] > 0 else {
                slotFree[slot] = at(seconds)
                continue
            }
            switch limiters[host].admit(.info, within: limits, now: now) {
            case .wait(let wait):
                slotFree[slot] = now + max(wait, .milliseconds(1))
            case .go(let grant):
                let answered = now + latency
                let bytes = min(requestBytes, grant.limits.maxBytes, unsent[host])
                if receiver.tokens(at: now) >= Double(bytes) {
                    receiver.debit(Double(bytes), now: now)
                    run.accepted.append(((now - start).seconds, bytes))
                    unsent[host] -= bytes
                    if unsent.allSatisfy({ $0 == 0 }) { run.drained = (now - start).seconds }
                    limiters[host].charge(
                        grant, UploadRateLimiter.Spending(requests: 1, sentBytes: bytes, sentSpoolBytes: bytes),
                        now: answered)
                } else {
                    run.refused.append((now - start).seconds)
                    limiters[host].charge(
                        grant, UploadRateLimiter.Spending(requests: 1, failedSpoolBytes: bytes), now: answered)
                    if limiters[host].overloaded(sentAt: now, now: answered) == .atFloor { run.pauses += 1 }
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

    @Test("""
        fifty hosts with backlogs, each a fiftieth of a receiver's capacity, find their shares: few refusals once they \
        have, and the backlogs drain close to the capacity's pace
        """)
    func fleetFindsItsShares() throws {
        // The fleet of `logshipd-bench fleet`: 50 hosts of 20 000 lines (150 bytes each) in batches of 1 000,
        // against a receiver taking 20 000 lines a second, the hosts coming in over ten seconds.
        let capacity = 3_000_000.0
        let run = overloadRun(
            capacity: capacity, requestBytes: 150_000, seconds: 300, hosts: 50, backlog: 3_000_000, stagger: 0.2)
        let ideal = 50 * 3_000_000 / capacity
        let drained = try #require(run.drained, "every backlog was taken within 300 s")
        #expect(drained < 1.2 * ideal, "drained in \(drained) s, the capacity's pace \(ideal) s")
        let refusedShare = Double(run.refusals(from: 10)) / Double(run.requests(from: 10))
        #expect(refusedShare < 0.05, "\(run.refusals(from: 10)) of \(run.requests(from: 10)) refused after 10 s")
        #expect(run.pauses == 0)
    }
}
