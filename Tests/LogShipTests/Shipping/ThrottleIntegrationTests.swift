import Foundation
@testable import LogShip
import LogShipTestKit
import Synchronization
import Testing

/// The link's budget against a real receiver on loopback: what leaves stays within it, crash records do not
/// wait for it, and a receiver that says it is overloaded slows the daemon down instead of pausing it.
@Suite("Upload rate budget")
struct ThrottleIntegrationTests {
    /// A backlog of `count` info records of about `size` bytes each, written while uploads are paused.
    func backlog(_ daemon: TestDaemon, count: Int, size: Int) async throws {
        daemon.shipper.setPausedByOperator(true)
        let padding = String(repeating: "x", count: size)
        try await daemon.send(count: count, priority: "info", prefix: "backlog \(padding)")
    }

    @Test("what leaves never runs ahead of the budget: in any stretch, at most a burst more than the rate allows")
    func bytesWithinBudget() async throws {
        let budget = 256 << 10
        let daemon = try await TestDaemon.start { configuration in
            configuration.upload.rate = UploadRateBudget(bytesPerSecond: budget)
        }
        try await backlog(daemon, count: 5000, size: 200)
        let total = daemon.receiver.requests.count
        #expect(total == 0)
        daemon.shipper.setPausedByOperator(false)
        // A budget, not a stop: the whole backlog arrives (how fast is the machine's; a timed floor failed in CI).
        try await daemon.receiver.waitFor(records: 5000)

        let requests = daemon.receiver.requests.sorted { $0.arrivedAt < $1.arrivedAt }
        let sent = requests.reduce(0) { $0 + $1.bodyBytes }
        #expect(sent > 4 * budget, "a backlog of several seconds: \(sent) bytes")
        // Token-bucket conformance, as the receiver saw it: between any two arrivals, no more than the rate over
        // the time between them plus the burst (1 s of the rate), the largest request (the bucket lets one request
        // run it into debt), and another second of the rate: a receiver stalled by a loaded machine sees requests
        // sent apart arrive together. A slow machine only delivers later, never more; without the budget, the whole
        // backlog (6 s of it) arrives within a fraction of a second.
        let slack = Double(budget) * 2 + Double(requests.map(\.bodyBytes).max() ?? 0)
        for first in requests.indices {
            var bytes = 0
            for last in first..<requests.count {
                bytes += requests[last].bodyBytes
                let allowed = Double(budget) * (requests[last].arrivedAt - requests[first].arrivedAt).seconds + slack
                if Double(bytes) > allowed {
                    Issue.record("requests \(first)...\(last): \(bytes) bytes where the budget allows \(Int(allowed))")
                    try await daemon.stop()
                    return
                }
            }
        }
        let status = try await daemon.status()
        #expect(status.rateBudget == budget && status.rateEffective == budget)
        // Waited at all: how long depends on the machine (a slow one sends later, and waits less for tokens).
        #expect(
            (status.throttledSeconds["info"] ?? 0) > 0,
            "the backlog waited for the budget: \(status.throttledSeconds)")
        try await daemon.stop()
    }

    @Test("a crash record goes out at once while the budget holds a backlog back, ahead of 90% of it")
    func crashNeverWaits() async throws {
        let daemon = try await TestDaemon.start { configuration in
            configuration.upload.rate = UploadRateBudget(bytesPerSecond: 64 << 10)
        }
        try await backlog(daemon, count: 4000, size: 200)
        daemon.shipper.setPausedByOperator(false)
        // Saturated: the budget has been spent and the backlog is waiting for it.
        try await daemon.receiver.waitFor(records: 1)
        try await eventually { try await daemon.status().throttledSeconds["info", default: 0] > 0 }

        #expect(try await daemon.send([Submission(message: "the crash", priority: "crash")]).ok)
        let pendingAtAcceptance = 4000 - daemon.receiver.records.count
        try await daemon.receiver.waitUntil { $0.contains { $0.records.contains { $0.message == "the crash" } } }
        let infoSince = daemon.receiver.records.count - 1 - (4000 - pendingAtAcceptance)
        // Ahead of 90% of what was pending and not yet sent: the two requests in flight when the crash was
        // accepted (each at most the largest request seen) cannot be overtaken, and on a slow machine they may be
        // most of what was still pending.
        let inFlight = 2 * (daemon.receiver.requests.map(\.recordCount).max() ?? 0)
        #expect(
            Double(infoSince) <= Double(inFlight) + Double(max(pendingAtAcceptance - inFlight, 0)) * 0.1,
            """
            \(infoSince) backlog records arrived between the crash's acceptance and its arrival, \
            of \(pendingAtAcceptance) pending
            """)
        #expect(try await daemon.status().throttledSeconds["crash"] == nil, "the crash class never waited")
        try await daemon.stop()
    }

    @Test("429 without Retry-After lowers the rate in force and delivery goes on without a pause; the rate recovers")
    func overloadedReceiverSlowsDown() async throws {
        let budget = 1 << 20
        // The receiver is overloaded for its first three requests.
        let receiver = try await TestReceiver(behavior: .init { sequence, _ in sequence < 3 ? 429 : 200 })
        let daemon = try await TestDaemon.start(receiver: receiver) { configuration in
            configuration.upload.rate = UploadRateBudget(bytesPerSecond: budget, minimumBytesPerSecond: 1024)
            configuration.upload.maxInFlight = 1
        }
        try await daemon.send(count: 20, priority: "info", prefix: "during the overload")
        try await receiver.waitUntil { $0.filter { $0.status == 200 }.reduce(0) { $0 + $1.recordCount } == 20 }
        let overloads = receiver.requests.filter { $0.status == 429 }.map(\.arrivedAt)
        #expect(overloads.count == 3)
        let firstOverload = try #require(overloads.min())
        let firstAccepted = try #require(receiver.requests.filter { $0.status == 200 }.map(\.arrivedAt).min())
        // The recovery. Nothing was accepted before the 429s, so there was no capacity to measure: each decrease
        // takes half the rate in force as the receiver's estimate, starts at 0.8 of it and grows back along
        // OverloadController's cubic. Three decreases from the budget leave an estimate of at least 0.08 of it,
        // and the last came before the first accepted request was sent, which bounds the rate from below. From
        // above: the estimate is at most half of what the curve before it reached by the time the next 429 came,
        // which is no later than the first accepted request, and the curve runs from the first overload at the
        // earliest. Both hold whatever the machine's speed.
        /// The limit `seconds` after a decrease to `estimate`, at most the budget.
        func curve(_ estimate: Double, after seconds: Duration) -> Double {
            min(Double(budget), OverloadController.rate(estimate: estimate, after: seconds))
        }
        let overloaded = firstAccepted - firstOverload
        let highestEstimate = curve(curve(Double(budget) / 2, after: overloaded) / 2, after: overloaded) / 2
        let lowestEstimate = Double(budget) * 0.08
        // Back at the budget no sooner than the highest curve gets there, from the first overload.
        let lost = 1 - OverloadController.decreaseFactor
        let earliest = OverloadController.plateau * (1 + cbrt((Double(budget) / highestEstimate - 1) / lost))
        let status = try await daemon.status()
        #expect(status.rateHeldDownByReceiver || ContinuousClock.now - firstOverload >= earliest, "\(status)")
        #expect(status.pausedUntil == nil && status.lastFailure == nil, "no pause: \(status.pausedUntil ?? "")")
        let shown = try await run(Binaries.logctl, ["status", "--socket", daemon.controlPath]).standardOutput
        let remote = shown.split(separator: "\n").first { $0.hasPrefix("remote ") }.map(String.init) ?? ""
        if try await daemon.status().rateHeldDownByReceiver {
            #expect(
                remote.hasSuffix("accepting, slowed down: it answered 429/503 to more (see upload rate)"), "\(shown)")
        }

        // The recovery, followed until the rate is the budget again: each look at the rate, with the clock read
        // just before and just after it.
        let samples = Mutex<[(before: ContinuousClock.Instant, effective: Int?, after: ContinuousClock.Instant)]>([])
        try await eventually(within: .seconds(180)) {
            let before = ContinuousClock.now
            let status = try await daemon.status()
            samples.withLock { $0.append((before, status.rateEffective, .now)) }
            return !status.rateHeldDownByReceiver
        }
        for (index, sample) in samples.withLock({ $0 }).enumerated() {
            let effective = Double(try #require(sample.effective))
            let least = curve(lowestEstimate, after: sample.before - firstAccepted)
            let most = curve(highestEstimate, after: sample.after - firstOverload)
            guard effective >= least - 1 && effective <= most + 1 else {
                Issue.record("\(Int(effective)) B/s, expected \(Int(least))...\(Int(most)) (sample \(index + 1))")
                break
            }
        }
        #expect(try await daemon.status().rateEffective == budget)
        #expect(receiver.requests.filter { $0.status == 429 }.count == 3)
        try await daemon.stop()
    }

    @Test("at the floor, a receiver that keeps answering 503 pauses delivery as an unavailable one does")
    func overloadAtTheFloorPauses() async throws {
        let receiver = try await TestReceiver(behavior: .init(failureRate: 1, failureStatus: 503))
        let daemon = try await TestDaemon.start(receiver: receiver) { configuration in
            configuration.upload.rate = UploadRateBudget(bytesPerSecond: 64 << 10, minimumBytesPerSecond: 64 << 10)
        }
        try await daemon.send(count: 5, priority: "info", prefix: "refused")
        // The pause is short (the tests' retry backoff): read its cause in the same status that shows it.
        try await eventually {
            let status = try await daemon.status()
            return status.pausedUntil != nil && status.pauseCause == "remote unavailable"
        }
        try await daemon.stop()
    }
}
