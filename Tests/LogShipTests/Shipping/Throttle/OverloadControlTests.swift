import Testing

@testable import LogShip

/// Additive increase, multiplicative decrease, with a manual clock.
struct OverloadControlTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test("an overload halves the budget, and each healthy second adds back a twentieth of it until it is whole")
    func halvesAndRecovers() throws {
        var control = OverloadControl()
        #expect(control.limit(at: at(0), budget: 1000) == 1000)
        let handled = control.overloaded(sentAt: at(0), now: at(0), rate: 1000, budget: 1000, floor: 10)
        #expect(handled)
        #expect(control.limit(at: at(0), budget: 1000) == 500)
        #expect(control.limit(at: at(0.9), budget: 1000) == 500, "a second must pass before a step")
        #expect(control.limit(at: at(1), budget: 1000) == 550)
        #expect(control.limit(at: at(4), budget: 1000) == 700)
        #expect(control.limit(at: at(10), budget: 1000) == 1000)
        control.settle(at: at(10), budget: 1000)
        #expect(control == OverloadControl(), "the overload is forgotten")
    }

    @Test("two requests in flight refused together halve the rate once; a later request's refusal again")
    func oneDecreasePerOverload() {
        var control = OverloadControl()
        _ = control.overloaded(sentAt: at(0), now: at(0.1), rate: 1000, budget: 1000, floor: 10)
        let handled = control.overloaded(sentAt: at(0.05), now: at(0.12), rate: 500, budget: 1000, floor: 10)
        #expect(handled)
        #expect(control.limit(at: at(0.2), budget: 1000) == 500, "sent before the decrease: already answered")
        _ = control.overloaded(sentAt: at(0.3), now: at(0.4), rate: 500, budget: 1000, floor: 10)
        #expect(control.limit(at: at(0.4), budget: 1000) == 250)
    }

    @Test("never below the floor; refused at the floor, the caller is told to pause")
    func floor() {
        var control = OverloadControl()
        _ = control.overloaded(sentAt: at(0), now: at(0), rate: 300, budget: 300, floor: 200)
        #expect(control.limit(at: at(0), budget: 300) == 200)
        let handled = control.overloaded(sentAt: at(0.5), now: at(0.5), rate: 200, budget: 300, floor: 200)
        #expect(!handled)
    }

    @Test("without a budget, the measured rate is halved and recovered, then there is no limit again")
    func unlimited() {
        var control = OverloadControl()
        #expect(control.limit(at: at(0), budget: nil) == nil)
        _ = control.overloaded(sentAt: at(0), now: at(0), rate: 2000, budget: nil, floor: 10)
        #expect(control.limit(at: at(0), budget: nil) == 1000)
        #expect(control.limit(at: at(5), budget: nil) == 1500)
        #expect(control.limit(at: at(10), budget: nil) == nil)
    }
}
