import Testing

@testable import LogShip

/// The bucket with a manual clock: instants are a start plus what the test says.
struct TokenBucketTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test("fills at its rate up to its capacity, starting empty")
    func fills() {
        let bucket = TokenBucket(rate: 100, capacity: 50, now: at(0))
        #expect(bucket.tokens(at: at(0)) == 0)
        #expect(abs(bucket.tokens(at: at(0.2)) - 20) < 1e-6)
        #expect(bucket.tokens(at: at(10)) == 50, "never above the capacity")
    }

    @Test("a debit may go below zero, and the debt is repaid before anything can be spent")
    func debt() {
        var bucket = TokenBucket(rate: 100, capacity: 50, level: 50, now: at(0))
        bucket.debit(150, now: at(0))
        #expect(bucket.tokens(at: at(0)) == -100)
        #expect(bucket.waitUntilHolding(10, now: at(0)) == .seconds(1.1))
        #expect(abs(bucket.tokens(at: at(1.1)) - 10) < 1e-6)
    }

    @Test("the wait for an amount is what the rate needs to bring it, and nothing once it is held")
    func waits() {
        let bucket = TokenBucket(rate: 1000, capacity: 1000, now: at(0))
        #expect(bucket.waitUntilHolding(250, now: at(0)) == .milliseconds(250))
        #expect(bucket.waitUntilHolding(250, now: at(0.3)) == .zero)
        #expect(
            bucket.waitUntilHolding(5000, now: at(0)) == .seconds(1), "more than the capacity waits for the capacity")
    }

    @Test("a credit gives back up to the capacity; a rate change keeps the level, cut to the new capacity")
    func creditAndChange() {
        var bucket = TokenBucket(rate: 100, capacity: 100, level: 90, now: at(0))
        bucket.credit(50, now: at(0))
        #expect(bucket.tokens(at: at(0)) == 100)
        bucket.change(rate: 10, capacity: 20, now: at(0))
        #expect(bucket.tokens(at: at(0)) == 20)
        bucket.debit(20, now: at(0))
        #expect(abs(bucket.tokens(at: at(1)) - 10) < 1e-6, "fills at the new rate")
    }

    @Test("over a long backlog, what leaves matches the rate however the debits fall")
    func average() {
        var bucket = TokenBucket(rate: 1000, capacity: 1000, now: at(0))
        var now = 0.0
        var spent = 0.0
        // A backlog: every time the bucket holds 300, 300 goes out.
        while now < 60 {
            let wait = bucket.waitUntilHolding(300, now: at(now)).seconds
            now += wait
            bucket.debit(300, now: at(now))
            spent += 300
        }
        #expect(abs(spent / now - 1000) / 1000 < 0.01, "\(spent / now) per second")
    }
}
