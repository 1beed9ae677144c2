import Foundation
import Testing

@testable import LogShip

/// A reload that changes `upload.url`: an endpoint is its URL, so its state and counts follow the URL, a place with
/// another URL starts afresh, and delivery starts over when the active place or one preferred over it changed.
@Suite("Shipper state machine: upload.url changed by a reload")
struct ShipperStateMachineReloadTests {
    typealias Harness = ShipperHarness

    static let (a, b, c) = ("https://a.example/ingest", "https://b.example/ingest", "https://c.example/ingest")

    @Test("""
        endpoints swapped while the first rests: each URL keeps its counts, the one that rested stands by, delivery \
        goes to the new first
        """)
    func swapped() throws {
        var harness = try ShipperStateMachineFailoverTests.movedAway()
        harness.recordsAvailable([.info])
        #expect(harness.timers[.probeEndpoint(0)] != nil, "records wait: the first's probe is armed")
        let before = harness.waiting.filter { !$0.isCancelled }
        #expect(!before.isEmpty && before.allSatisfy { $0.endpoint == 1 })

        harness.reload(endpoints: [Self.b, Self.a])
        let shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(shown.endpoints.map(\.name) == [Self.b, Self.a])
        #expect(shown.activeEndpoint == 0, "b, as before, now in first place")
        #expect(shown.endpoints[0].totals.delivered == 10, "b's counts")
        #expect(shown.endpoints[1].totals.failedRequests == 1, "a's counts")
        #expect(shown.endpoints[1].rest == nil, "a stands by: what was learnt of a place is dropped, as by a restart")
        #expect(harness.timers[.probeEndpoint(0)] == nil && harness.timers[.probeEndpoint(1)] == nil)
        let ids = Set(before.map(\.id))
        let cancelled = harness.waiting.filter { ids.contains($0.id) }.allSatisfy { $0.isCancelled }
        #expect(cancelled, "what waited for place 1 would go to a now")
        let after = harness.waiting.filter { !$0.isCancelled }
        #expect(!after.isEmpty && after.allSatisfy { $0.endpoint == 0 })
        #expect(!harness.notices.contains { if case .movedByReload = $0 { true } else { false } }, "b stays active")
    }

    @Test(
        "the active endpoint renamed: delivery starts with the new URL; a URL that comes back goes on with its counts"
    )
    func renamed() throws {
        var harness = Harness(endpoints: [Self.a, Self.b])
        let first = try harness.claimInfo(moreLeft: false)
        harness.finish(first, Reports.accepted(at: harness.now))

        harness.reload(endpoints: [Self.c, Self.b])
        var shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(shown.activeEndpoint == 0 && shown.endpoints[0].name == Self.c)
        #expect(shown.endpoints[0].totals.delivered == 0, "c was sent nothing")
        #expect(harness.notices.last == .movedByReload(from: Self.a, to: Self.c))
        #expect(shown.totals.delivered == 10, "the link's counts stay")

        harness.reload(endpoints: [Self.a, Self.b])
        shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(shown.endpoints[0].totals.delivered == 10, "a's counts go on: its metrics counter never goes back")
        #expect(harness.notices.last == .movedByReload(from: Self.c, to: Self.a))
    }

    @Test("a URL changed after the active endpoint leaves delivery alone; only that place starts afresh")
    func changedAfterActive() throws {
        var harness = Harness(endpoints: [Self.a, Self.b])
        harness.recordsAvailable([.info])
        let waiting = harness.waiting.filter { !$0.isCancelled }
        #expect(!waiting.isEmpty)
        let notices = harness.notices.count

        harness.reload(endpoints: [Self.a, Self.c])
        let shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(shown.activeEndpoint == 0 && shown.endpoints.map(\.name) == [Self.a, Self.c])
        #expect(harness.waiting.filter { !$0.isCancelled }.map(\.id) == waiting.map(\.id), "nothing is made again")
        #expect(harness.notices.count == notices)
    }

    @Test("a reload while every endpoint rests and delivery pauses: a new URL ends the pause and takes delivery")
    func newURLEndsPause() throws {
        var harness = try ShipperStateMachineFailoverTests.everyEndpointFailed(second: Reports.refusedConnection)
        #expect(harness.isPaused && harness.timers[.endPause] != nil)
        harness.reload(endpoints: [Self.a, Self.c])
        let shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(!harness.isPaused && harness.timers[.endPause] == nil)
        #expect(shown.activeEndpoint == 1 && shown.endpoints[0].rest != nil, "a still rests; c takes delivery")
        #expect(harness.notices.last == .movedByReload(from: Self.b, to: Self.c))
        let next = harness.waiting.filter { !$0.isCancelled }
        #expect(!next.isEmpty && next.allSatisfy { $0.endpoint == 1 })
    }

    @Test("""
        a request on its way when a reload gives its place another URL: counted for the URL it went to, judged for none
        """)
    func inFlightAcrossReload() throws {
        var harness = Harness(endpoints: [Self.a, Self.b])
        let first = try harness.claimInfo(moreLeft: false)
        harness.reload(endpoints: [Self.c, Self.b])
        harness.finish(first, Reports.failed(Reports.refusedConnection, at: harness.now))
        var shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(shown.activeEndpoint == 0 && shown.endpoints[0].rest == nil, "c is not rested for a's failure")
        #expect(!harness.isPaused && shown.endpoints[0].totals.requests == 0)
        #expect(!harness.notices.contains { if case .movedEndpoint = $0 { true } else { false } })
        harness.reload(endpoints: [Self.a, Self.b])
        shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(shown.endpoints[0].totals.failedRequests == 1, "a's request is a's")
    }

    @Test("parts isolating the refusal of a place whose URL changed go out as batches of their own")
    func partsAcrossReload() throws {
        var harness = try ShipperStateMachineFailoverTests.movedAway()
        let refused = try harness.claimInfo(endpoint: 1, moreLeft: false)
        let (refusal, _, _) = Reports.refusedInHalves(at: harness.now, by: 1)
        harness.finish(refused, refusal)
        harness.reload(endpoints: [Self.b, Self.a])
        // The waiting parts were cancelled by the move; the queue starts them, and they come back to the class.
        while let operation = harness.startNext() {
            guard case .send = operation.work, !operation.isCancelled else {
                if !operation.isCancelled { harness.claimedNothing(operation) }
                harness.finish(operation, operation.isCancelled ? .cancelled : .nothingToSend)
                continue
            }
            guard case .send(let part) = operation.work else { continue }
            #expect(part.endpoint == nil, "b's refusal was isolated at place 1, which is a's now")
            harness.finish(operation, Reports.accepted(at: harness.now))
        }
    }

    @Test("""
        a reload while the active endpoint is paused and another place gets a new URL: the paused one rests, the new \
        one takes delivery
        """)
    func pausedActiveRests() throws {
        var harness = try ShipperStateMachineFailoverTests.everyEndpointFailed(second: Reports.refusedConnection)
        #expect(harness.isPaused && ShipperStateMachineFailoverTests.statistics(harness).activeEndpoint == 1)
        harness.reload(endpoints: [Self.c, Self.b])
        let shown = ShipperStateMachineFailoverTests.statistics(harness)
        #expect(shown.activeEndpoint == 0 && !harness.isPaused)
        #expect(shown.endpoints[1].rest != nil, "b, paused a moment ago, rests out its pause")
    }
}
