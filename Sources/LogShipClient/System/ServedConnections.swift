import NIOCore
import Synchronization

/// The connections a listener is serving, so that a stop can wait for them to end and end those that outstay it.
package final class ServedConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var emptyWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        /// Whether ``closeAll()`` was called: a connection inserted afterwards is refused.
        var isClosing = false
    }

    private let state = Mutex(State())

    package init() {}

    /// Serves `channel` from now on; `false` once ``closeAll()`` was called, and the caller closes it instead.
    package func insert(_ channel: any Channel) -> Bool {
        state.withLock { state in
            guard !state.isClosing else { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    package func remove(_ channel: any Channel) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.channels[ObjectIdentifier(channel)] = nil
            guard state.channels.isEmpty else { return [] }
            defer { state.emptyWaiters = [:] }
            return Array(state.emptyWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until no connection is served any more, at most `timeout`; returns whether none is.
    package func waitUntilEmpty(within timeout: Duration) async -> Bool {
        let emptied = await wait(within: timeout) {
            await self.emptied()
            return !Task.isCancelled
        }
        return emptied || state.withLock { $0.channels.isEmpty }
    }

    /// Closes every connection served, and refuses those inserted from now on; returns `false` when an earlier
    /// call did so already.
    @discardableResult
    package func closeAll() -> Bool {
        let (channels, wasClosing) = state.withLock { state in
            defer { state.isClosing = true }
            return (Array(state.channels.values), state.isClosing)
        }
        for channel in channels { channel.close(promise: nil) }
        return !wasClosing
    }

    /// Returns once no connection is served, or once the task is cancelled.
    private func emptied() async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let isEmpty = state.withLock { state in
                    if state.channels.isEmpty || Task.isCancelled { return true }
                    state.emptyWaiters[id] = continuation
                    return false
                }
                if isEmpty { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.emptyWaiters.removeValue(forKey: id) }?.resume()
        }
    }
}
