import Testing

@testable import LogShip

/// How the daemon gives freed memory back once the spool has emptied.
@Suite("Malloc tuning")
struct MallocTuningTests {
    @Test("memory is given back at most once per interval, however often the spool empties")
    func releaseIsThrottled() {
        // Far ahead of the clock, so that spools emptying in other tests meanwhile (at the real time) neither
        // trim in between nor move the last trim past these instants.
        let start = ContinuousClock.now + .seconds(1_000_000)
        #expect(MallocTuning.releaseFreeMemory(now: start))
        #expect(!MallocTuning.releaseFreeMemory(now: start + MallocTuning.releaseInterval / 2))
        #expect(MallocTuning.releaseFreeMemory(now: start + MallocTuning.releaseInterval))
    }
}
