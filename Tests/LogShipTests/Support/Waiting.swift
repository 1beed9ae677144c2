import Foundation

/// Polls `condition` until it holds, failing after `timeout`; for state that offers no notification.
func waitUntil(
    within timeout: Duration = .seconds(5), _ condition: @Sendable () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(description: "condition not met within \(timeout)") }
        try await Task.sleep(for: .milliseconds(2))  // poll interval until the deadline
    }
}

/// Polls an async `condition` until it holds, failing after `timeout`; for the daemon's status counters.
func eventually(
    within timeout: Duration = .seconds(10), _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(description: "condition not met within \(timeout)") }
        try await Task.sleep(for: .milliseconds(20))  // poll interval until the deadline
    }
}

/// Checks FIFO order across requests that may overlap: each request's numbers ascend, and every number in a
/// request is below every number in requests that arrived `window` or more requests later (requests closer than
/// that may have been in flight together). Returns the pairs that break it; zero for FIFO.
func fifoViolations(_ requests: [[Int]], window: Int) -> Int {
    var violations = requests.count { $0 != $0.sorted() }
    let nonEmpty = requests.filter { !$0.isEmpty }
    for (index, request) in nonEmpty.enumerated() {
        let highest = request.max()!
        for later in nonEmpty.dropFirst(index + window) where later.min()! < highest {
            violations += 1
        }
    }
    return violations
}
