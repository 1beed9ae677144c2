import Foundation
import Testing

@testable import LogShip

/// The retry policy alone: what each failure means for the link.
@Suite("Retry policy")
struct RetryPolicyTests {
    static let bounds = RetryPolicy.Bounds(
        initial: .milliseconds(100), maximum: .seconds(2), retryAfterMaximum: .seconds(5))

    @Test("random 503s at 5% and 20% are sent again at once: never a pause, never a lower rate")
    func noise() {
        for share in [0.05, 0.2] {
            var policy = RetryPolicy(bounds: Self.bounds)
            var jitter = Jitter(seed: 42)
            var reactions: [RetryPolicy.Reaction] = []
            for _ in 0..<2_000 {
                if jitter.next() < share {
                    reactions.append(policy.failed(.status(503, responseExcerpt: ""), jitter: 0.5))
                } else {
                    policy.answered()
                }
            }
            let slowed = reactions.count { $0 == .slowDown }
            let paused = reactions.count { if case .pause = $0 { true } else { false } }
            #expect(slowed == 0, "\(share): \(slowed) slowdowns")
            #expect(paused == 0, "\(share): \(paused) pauses")
        }
    }

    @Test("""
        failures in a row pause at the third when they are most of the last answers, at the seventh after a healthy run
        """)
    func failingEverything() {
        var fresh = RetryPolicy(bounds: Self.bounds)
        let failed = UploadError.status(502, responseExcerpt: "")
        #expect(fresh.failed(failed, jitter: 1) == .retry)
        #expect(fresh.failed(failed, jitter: 1) == .retry)
        #expect(
            fresh.failed(failed, jitter: 1) == .pause(.milliseconds(400), .remoteUnavailable, isAskedByRemote: false),
            "three of three answers")

        // After a long healthy run, seven in a row; the first pause as long as after three from the start.
        var answering = RetryPolicy(bounds: Self.bounds)
        for _ in 0..<20 { answering.answered() }
        var reactions: [RetryPolicy.Reaction] = []
        for _ in 0..<7 { reactions.append(answering.failed(failed, jitter: 1)) }
        #expect(reactions.dropLast().allSatisfy { $0 == .retry }, "six in a row after twenty taken: chance")
        #expect(reactions.last == .pause(.milliseconds(400), .remoteUnavailable, isAskedByRemote: false))
        #expect(
            answering.failed(failed, jitter: 1)
                == .pause(.milliseconds(800), .remoteUnavailable, isAskedByRemote: false),
            "the pause doubles from there")
    }

    @Test("503s that are most of the last answers, twenty at least, ask for less; a 429 always does")
    func sustainedOverload() {
        var policy = RetryPolicy(bounds: Self.bounds)
        var slowedDownAt: [Int] = []
        for index in 0..<30 {
            if index % 3 == 0 { policy.answered() } else if policy.failed(
                .status(503, responseExcerpt: ""), jitter: 0.5) == .slowDown
            {
                slowedDownAt.append(index + 1)
            }
        }
        #expect(slowedDownAt.first == 20, "two thirds refused: sustained, once twenty answers are in")
        var fresh = RetryPolicy(bounds: Self.bounds)
        #expect(fresh.failed(.status(429, responseExcerpt: ""), jitter: 0.5) == .slowDown)
    }

    @Test("after fifty answers taken, 503s ask for less at the 26th: the most of the last fifty")
    func sustainedAfterAHealthyRun() {
        var policy = RetryPolicy(bounds: Self.bounds)
        for _ in 0..<60 { policy.answered() }
        let reactions = (1...30).map { _ in policy.failed(.status(503, responseExcerpt: ""), jitter: 0.5) }
        #expect(reactions.firstIndex(of: .slowDown).map { $0 + 1 } == 26)
        let seventh = reactions[6]
        #expect(reactions.prefix(6).allSatisfy { $0 == .retry }, "six in a row after a healthy run: chance")
        guard case .pause = seventh else {
            Issue.record("the seventh in a row pauses, as any failure does: \(seventh)")
            return
        }
    }

    @Test("503s now and then never ask for less, even when they come first")
    func busyNoise() {
        // One answer in five refused, but three of the first five: most of those five, never of twenty or more.
        var policy = RetryPolicy(bounds: Self.bounds)
        let first: [Bool] = [false, true, true, true, false]
        for index in 0..<200 {
            let isRefused = index < first.count ? first[index] : index % 5 == 0
            if isRefused {
                #expect(policy.failed(.status(503, responseExcerpt: ""), jitter: 0.5) != .slowDown, "answer \(index)")
            } else {
                policy.answered()
            }
        }
    }

    @Test("no answer is an outage: a pause at once, as long as the backoff, which grows with failures in a row")
    func outage() {
        var policy = RetryPolicy(bounds: Self.bounds)
        let refused = UploadError.transport("cannot connect to 127.0.0.1:8514: connection refused")
        #expect(
            policy.failed(refused, jitter: 1) == .pause(.milliseconds(100), .remoteUnavailable, isAskedByRemote: false))
        #expect(
            policy.failed(refused, jitter: 1) == .pause(.milliseconds(200), .remoteUnavailable, isAskedByRemote: false))
        #expect(
            policy.failed(refused, jitter: 0) == .pause(.milliseconds(200), .remoteUnavailable, isAskedByRemote: false),
            "half the ceiling at least")
        policy.answered()
        #expect(
            policy.failed(.timeout("timed out"), jitter: 1)
                == .pause(.milliseconds(100), .remoteUnavailable, isAskedByRemote: false))
    }

    @Test("Retry-After is obeyed up to upload.retry_after_max, never below the backoff")
    func retryAfter() {
        var policy = RetryPolicy(bounds: Self.bounds)
        #expect(policy.failed(.status(429, responseExcerpt: "", retryAfter: 3), jitter: 1)
            == .pause(.seconds(3), .remoteUnavailable, isAskedByRemote: true))
        #expect(policy.failed(.status(503, responseExcerpt: "", retryAfter: 1e30), jitter: 1)
            == .pause(.seconds(5), .remoteUnavailable, isAskedByRemote: true))
        var zero = RetryPolicy(bounds: Self.bounds)
        #expect(zero.failed(.status(503, responseExcerpt: "", retryAfter: 0), jitter: 1)
            == .pause(.milliseconds(100), .remoteUnavailable, isAskedByRemote: false),
            "a Retry-After of 0 is no licence to hammer")
    }

    @Test("a refused endpoint or credentials, or every part refused, pauses with the endpoint's cause")
    func endpoint() {
        var policy = RetryPolicy(bounds: Self.bounds)
        #expect(
            policy.failed(.status(401, responseExcerpt: ""), jitter: 1)
                == .pause(.milliseconds(100), .endpointRefused, isAskedByRemote: false))
        #expect(
            policy.failed(.status(409, responseExcerpt: ""), jitter: 1)
                == .pause(.milliseconds(200), .endpointRefused, isAskedByRemote: false))
    }

    @Test("the backoff grows exponentially to its cap; the longest configurable delays do not overflow it")
    func backoff() {
        #expect(RetryPolicy.ceiling(afterFailures: 1, Self.bounds) == .milliseconds(100))
        #expect(RetryPolicy.ceiling(afterFailures: 3, Self.bounds) == .milliseconds(400))
        #expect(RetryPolicy.ceiling(afterFailures: 10, Self.bounds) == .seconds(2))
        #expect(RetryPolicy.ceiling(afterFailures: 10_000, Self.bounds) == .seconds(2))
        let longest = ValueParser<Duration>.longestDuration
        let extreme = RetryPolicy.Bounds(initial: longest, maximum: longest, retryAfterMaximum: longest)
        #expect(RetryPolicy.ceiling(afterFailures: 62, extreme) == longest)
        var policy = RetryPolicy(bounds: extreme)
        #expect(policy.failedElsewhere(jitter: 1) <= longest)
    }
}
