import Testing

@testable import LogShip

@Suite("Spool room reports")
struct SpoolRoomReportsTests {
    @Test(
        "a summary adds evictions by cause and class, and counts refusals for one reason once, under the latest numbers"
    )
    func tally() {
        var tally = SpoolRoomReports.Tally()
        var first = SpoolRoomReports.Tally()
        first.evicted[.disk] = [.info: 100]
        first.refused[.disk(free: 3_000, keptFree: 2_000)] = 2
        var second = SpoolRoomReports.Tally()
        second.evicted[.disk] = [.info: 20, .debug: 5]
        second.evicted[.budget] = [.info: 1]
        second.refused[.disk(free: 1_000, keptFree: 2_000)] = 3
        second.refused[.full(budget: 4_096)] = 1
        tally.add(first)
        tally.add(second)
        #expect(tally.evicted == [.disk: [.info: 120, .debug: 5], .budget: [.info: 1]])
        #expect(tally.refused == [.disk(free: 1_000, keptFree: 2_000): 5, .full(budget: 4_096): 1])
    }
}
