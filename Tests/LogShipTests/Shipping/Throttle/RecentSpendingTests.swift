import Testing

@testable import LogShip

/// The limiter's account of the last second's spending, with its manual clock.
extension UploadRateLimiterTests {
    @Test("what was spent in the last second, to the tenth; older spending drops out")
    func recentSpendingWindow() {
        var recent = RecentSpending()
        recent.add(100, at: at(0))
        recent.add(20, at: at(0.05))
        recent.add(3, at: at(0.55))
        #expect(recent.total(at: at(0.6)) == 123)
        #expect(recent.total(at: at(1.0)) == 3, "the first tenth has left")
        recent.add(4, at: at(1.2))
        #expect(recent.total(at: at(1.2)) == 7)
        #expect(recent.total(at: at(1.6)) == 4)
        #expect(recent.total(at: at(9)) == 0, "a quiet spell leaves nothing")
        recent.add(5, at: at(9.05))
        #expect(recent.total(at: at(9.1)) == 5, "the slots start again after a gap")
    }

    @Test("sixty thousand requests in a second are summed whole")
    func recentSpendingOfManyRequests() {
        var recent = RecentSpending()
        for index in 0..<60_000 { recent.add(2, at: at(Double(index) / 60_000)) }
        #expect(recent.total(at: at(0.99)) == 120_000)
    }
}
