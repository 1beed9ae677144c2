import Foundation
import Testing

@testable import LogShip

/// The shipper's machine with two endpoints: it moves delivery away from one that pauses, probes a preferred one
/// when its rest ends, and moves back once it answers; the pause of one endpoint only when every one is down.
@Suite("Shipper state machine: failover")
struct ShipperStateMachineFailoverTests {
    typealias Harness = ShipperHarness

    static let endpoints = ["https://a.example/ingest", "https://b.example/ingest"]

    @Test("""
        the active endpoint failing moves delivery to the next at once: no pause; what waited is made again for it, \
        crash first
        """)
    func movesOnFailure() throws {
        var harness = Harness(endpoints: Self.endpoints)
        harness.recordsAvailable([.info, .crash])
        let crash = try harness.start()
        #expect(crash.priorityClass == .crash && crash.endpoint == 0)
        harness.claimed(crash, moreLeft: false)
        harness.finish(crash, Reports.failed(Reports.refusedConnection, at: harness.now))
        #expect(!harness.isPaused, "the next endpoint takes the records")
        #expect(harness.waiting.contains { $0.isCancelled && $0.endpoint == 0 }, "the first's info claim is cancelled")
        #expect(harness.waiting.filter { !$0.isCancelled }.allSatisfy { $0.endpoint == 1 })
        let next = try harness.start()
        #expect(next.priorityClass == .crash && next.endpoint == 1, "the crash lane first, at the new endpoint")
        let shown = Self.statistics(harness)
        #expect(shown.activeEndpoint == 1)
        #expect(shown.endpoints[0].rest?.reason.contains("connection refused") == true)
        #expect(shown.endpoints[1].rest == nil)
        #expect(shown.endpoints[0].totals.failedRequests == 1 && shown.endpoints[1].totals.requests == 0)
        let reason = Reports.refusedConnection.description
        #expect(harness.notices.contains(
            .movedEndpoint(from: Self.endpoints[0], to: Self.endpoints[1], reason: reason)))
    }

    @Test("""
        a resting preferred endpoint is probed by one request once its rest is over: the next record's, or, when \
        records wait, a timer's at its end; a failed probe makes it rest longer; an answered one brings delivery back
        """)
    func probesAndReturns() throws {
        var harness = try Self.movedAway()
        harness.advance(by: 5)
        #expect(!harness.waiting.contains { $0.endpoint == 0 && !$0.isCancelled }, "nothing waits: nothing probes")
        #expect(harness.timers[.probeEndpoint(0)] == nil)

        harness.recordsAvailable([.info])
        #expect(
            harness.waiting.count { $0.endpoint == 0 && !$0.isCancelled } == 1, "its rest is over: the record probes")
        #expect(harness.waiting.count { $0.endpoint == 1 && !$0.isCancelled } == 0)
        let probe = try harness.start(endpoint: 0)
        harness.claimed(probe, moreLeft: true)
        #expect(harness.waiting.count { $0.endpoint == 0 && !$0.isCancelled } == 0, "one probe at a time")
        #expect(harness.waiting.count { $0.endpoint == 1 && !$0.isCancelled } == 2, "the rest goes to the second")
        harness.finish(probe, Reports.failed(Reports.refusedConnection, at: harness.now))
        #expect(Self.statistics(harness).activeEndpoint == 1, "still down: delivery stays")
        let again = try #require(harness.timers[.probeEndpoint(0)])
        #expect(again >= harness.now + .seconds(1), "a second failure in a row: a rest of 1 to 2 s")

        harness.advance(to: again)
        #expect(harness.waiting.count { $0.endpoint == 0 && !$0.isCancelled } == 1, "records wait: the timer probes")
        let second = try harness.start(endpoint: 0)
        harness.claimed(second, moreLeft: true)
        harness.finish(second, Reports.accepted(at: harness.now))
        let shown = Self.statistics(harness)
        #expect(shown.activeEndpoint == 0 && shown.endpoints[0].rest == nil && shown.endpoints[1].rest == nil)
        #expect(shown.endpoints[0].totals.delivered == 10)
        #expect(
            harness.waiting.filter { !$0.isCancelled }.allSatisfy { $0.endpoint == 0 }, "what waits goes to the first")
        #expect(!harness.waiting.filter { !$0.isCancelled }.isEmpty)
        #expect(harness.notices.last == .movedEndpoint(from: Self.endpoints[1], to: Self.endpoints[0], reason: nil))
        #expect(harness.timers[.probeEndpoint(0)] == nil && harness.timers[.probeEndpoint(1)] == nil)
    }

    @Test("""
        the parts of a batch the active endpoint refused stay with it, also when a resting endpoint is due for a \
        probe: its verdict must not mix receivers
        """)
    func partsDoNotProbe() throws {
        var harness = try Self.movedAway()
        let refused = try harness.claimInfo(endpoint: 1, moreLeft: false)
        harness.advance(by: 5)
        let (refusal, _, _) = Reports.refusedInHalves(at: harness.now, by: 1)
        harness.finish(refused, refusal)
        let parts = harness.waiting.filter { operation in
            if case .send = operation.work { !operation.isCancelled } else { false }
        }
        #expect(parts.map(\.endpoint) == [1, 1], "both parts go where the batch was refused")
    }

    @Test("""
        a less preferred endpoint that failed after delivery went back stands by once its rest is over: not shown as \
        resting for ever
        """)
    func lessPreferredStandsBy() throws {
        var harness = try Self.movedAway()
        let onSecond = try harness.claimInfo(endpoint: 1, moreLeft: true)
        harness.advance(by: 5)
        let probe = try harness.claimInfo(endpoint: 0, moreLeft: true)
        harness.finish(probe, Reports.accepted(at: harness.now))
        #expect(Self.statistics(harness).activeEndpoint == 0, "the preferred one is back")
        harness.finish(onSecond, Reports.failed(Reports.refusedConnection, at: harness.now))
        #expect(Self.statistics(harness).endpoints[1].rest != nil, "it rests out its pause")
        harness.advance(by: 60)
        let shown = Self.statistics(harness)
        #expect(shown.activeEndpoint == 0)
        #expect(shown.endpoints[1].rest == nil && shown.endpoints[1].restsUntil == nil, "it stands by")
    }

    @Test("crash records never probe a resting endpoint: they go to the one known to work")
    func crashDoesNotProbe() throws {
        var harness = try Self.movedAway()
        harness.advance(by: 5)
        harness.recordsAvailable([.crash])
        #expect(harness.waiting.filter { !$0.isCancelled }.map(\.endpoint) == [1])
        #expect(harness.timers[.probeEndpoint(0)] == nil)
        harness.recordsAvailable([.warning])
        #expect(harness.waiting.count { $0.endpoint == 0 && !$0.isCancelled } == 1, "a warning record probes")
    }

    @Test("an answer from the preferred endpoint to a request sent before delivery left it brings delivery back")
    func lateAnswerReturns() throws {
        var harness = Harness(endpoints: Self.endpoints)
        harness.recordsAvailable([.info])
        let first = try harness.start()
        harness.claimed(first, moreLeft: true)
        let second = try harness.start()
        harness.claimed(second, moreLeft: true)
        harness.finish(first, Reports.failed(Reports.refusedConnection, at: harness.now))
        #expect(Self.statistics(harness).activeEndpoint == 1)
        harness.finish(second, Reports.accepted(at: harness.now))
        let shown = Self.statistics(harness)
        #expect(shown.activeEndpoint == 0 && shown.endpoints[0].rest == nil)
        #expect(shown.endpoints[0].totals.delivered == 10 && shown.totals.delivered == 10)
    }

    @Test("every endpoint down: delivery pauses as with one, and a crash record probes the active endpoint")
    func everyEndpointDown() throws {
        var harness = try Self.everyEndpointFailed(second: Reports.refusedConnection)
        #expect(harness.isPaused && Self.statistics(harness).activeEndpoint == 1, "the first still rests")
        #expect(harness.waitingClasses.isEmpty)

        harness.recordsAvailable([.crash])
        let probeAt = try #require(harness.timers[.probeForCrash])
        harness.advance(to: probeAt)
        let crash = try harness.start()
        #expect(crash.priorityClass == .crash && crash.endpoint == 1)
    }

    @Test("a resting endpoint that answers its probe ends the pause of the active one, which rests out its pause")
    func probeEndsPause() throws {
        var harness = try Self.everyEndpointFailed(second: Reports.retryAfter(300))
        let pause = try #require(Self.statistics(harness).pause)
        let probeAt = try #require(harness.timers[.probeEndpoint(0)])
        #expect(probeAt < pause.until, "the first rests 30 to 60 s, the second asked for 300 s")

        harness.advance(to: probeAt)
        let probe = try harness.start(endpoint: 0)
        harness.finish(probe, Reports.accepted(at: harness.now))
        let shown = Self.statistics(harness)
        #expect(!harness.isPaused && harness.timers[.endPause] == nil && shown.activeEndpoint == 0)
        #expect(shown.endpoints[1].rest?.until == pause.until, "the second rests out what it asked for")
        #expect(harness.timers[.probeEndpoint(1)] == nil, "not preferred: not probed while the first accepts")
    }

    @Test("an operator's pause drops an armed endpoint probe; a resume arms it again")
    func operatorPause() throws {
        var harness = try Self.movedAway()
        harness.recordsAvailable([.info])
        #expect(harness.timers[.probeEndpoint(0)] != nil)
        harness.apply(harness.machine.setPausedByOperator(true, now: harness.now).actions)
        #expect(harness.timers[.probeEndpoint(0)] == nil)
        harness.apply(harness.machine.setPausedByOperator(false, now: harness.now).actions)
        #expect(harness.timers[.probeEndpoint(0)] != nil)
        harness.apply(harness.machine.beginShutdown(now: harness.now))
        #expect(harness.timers.isEmpty)
    }

    /// A harness whose first endpoint refused a connection: delivery went to the second, which took what waited;
    /// nothing waits now.
    static func movedAway() throws -> Harness {
        var harness = Harness(endpoints: Self.endpoints)
        harness.recordsAvailable([.info])
        let first = try harness.start()
        harness.claimed(first, moreLeft: false)
        harness.finish(first, Reports.failed(Reports.refusedConnection, at: harness.now))
        while let operation = harness.startNext() {
            if operation.priorityClass == .info {
                harness.claimed(operation, moreLeft: false)
                harness.finish(operation, Reports.accepted(at: harness.now))
            } else {
                harness.claimedNothing(operation)
                harness.finish(operation, .nothingToSend)
            }
        }
        return harness
    }

    /// A harness, retrying after 60 s to 10 min, whose first endpoint refused a connection and whose second then
    /// failed with `error`.
    static func everyEndpointFailed(second error: UploadError) throws -> Harness {
        var harness = Harness(
            retry: RetryPolicy.Bounds(initial: .seconds(60), maximum: .seconds(600), retryAfterMaximum: .seconds(300)),
            endpoints: Self.endpoints)
        harness.recordsAvailable([.info])
        let first = try harness.start()
        harness.finish(first, Reports.failed(Reports.refusedConnection, at: harness.now))
        let second = try harness.start(endpoint: 1)
        harness.finish(second, Reports.failed(error, at: harness.now))
        return harness
    }

    static func statistics(_ harness: Harness) -> Shipper.Statistics {
        harness.machine.statistics(at: harness.now, wallClock: Date())
    }
}
