import Foundation

// Every wait has a deadline, and the deadlines are long (three minutes by default; in a full run at load 15-30,
// one minute ran out for records that were on their way): they only decide how long a failing test takes to fail,
// and a slow, loaded machine must never make a passing one fail.

/// Polls `condition` until it holds, failing after `timeout`; for state that offers no notification.
public func waitUntil(
    within timeout: Duration = .seconds(180), _ condition: @Sendable () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            throw WaitTimeout(description: "condition not met within \(timeout)")
        }
        try await Task.sleep(for: .milliseconds(2))  // poll interval until the deadline
    }
}

/// Polls an async `condition` until it holds, failing after `timeout`; for the daemon's status counters.
public func eventually(
    within timeout: Duration = .seconds(180), _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            throw WaitTimeout(description: "condition not met within \(timeout)")
        }
        try await Task.sleep(for: .milliseconds(20))  // poll interval until the deadline
    }
}

/// A wait that ran out of time, or a step of a test harness that could not be done.
public struct WaitTimeout: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}
