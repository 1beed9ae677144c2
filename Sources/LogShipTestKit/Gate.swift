import Synchronization

/// Holds whoever waits on it until it is opened; then lets everyone through, now and later.
///
/// A receiver's `hold` waits on a gate to keep requests in flight until the test has set up the moment it
/// wants to look at, so what the test asserts does not depend on how fast the machine is.
public final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Returns once the gate is open.
    public func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    /// Opens the gate for good and releases every waiter.
    public func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
