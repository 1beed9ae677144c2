/// What `wait` returns if it returns within `timeout`, or `false` once `timeout` has passed; whichever comes
/// second is cancelled.
package func wait(within timeout: Duration, for wait: @escaping @Sendable () async -> Bool) async -> Bool {
    await withTaskGroup(of: Bool.self) { race in
        race.addTask { await wait() }
        race.addTask {
            try? await Task.sleep(for: timeout)
            return false
        }
        let first = await race.next() ?? false
        race.cancelAll()
        return first
    }
}
