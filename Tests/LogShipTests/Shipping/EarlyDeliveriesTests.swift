import Synchronization
import Testing

@testable import LogShip

@Suite("Early deliveries")
struct EarlyDeliveriesTests {
    @Test("the call comes after the 1st, 10th and 100th accepted request, and never again")
    func milestones() {
        let calls = Mutex(0)
        var early = EarlyDeliveries(call: { calls.withLock { $0 += 1 } })
        var called: [Int] = []
        for request in 1...1_000 {
            if let call = early.countAccepted() {
                call()
                called.append(request)
            }
        }
        #expect(called == [1, 10, 100])
        #expect(calls.withLock { $0 } == 3)
        #expect(early.accepted == 100, "counting stops at the last milestone")
    }

    @Test("without a call nothing is counted")
    func noCall() {
        var early = EarlyDeliveries(call: nil)
        for _ in 1...20 { #expect(early.countAccepted() == nil) }
        #expect(early.accepted == 0)
    }
}
