import Testing

@testable import LogShip

struct RepeatedPausesTests {
    @Test("the same failure again is logged at debug level until a request is accepted; another failure is news")
    func repeats() {
        let pauses = RepeatedPauses()
        let refused = "cannot connect to 127.0.0.1:8514: connection refused"
        #expect(pauses.level(for: refused, .warning) == .warning)
        // A crash probe refused a second later, and the next.
        #expect(pauses.level(for: refused, .warning) == .debug)
        #expect(pauses.level(for: refused, .warning) == .debug)
        #expect(pauses.level(for: "HTTP 401: unauthorized", .error) == .error)
        #expect(pauses.level(for: refused, .warning) == .warning, "back to the refusal: news again")
        pauses.remoteAccepted()
        #expect(pauses.level(for: refused, .warning) == .warning, "after an accepted request")
    }
}
