import Foundation
import LogShip
import LogShipTestKit
import Synchronization

/// Crash records sent one after another while a backlog drains, each with a number in its text
/// (`crash-probe-000042`), and how long each took from being sent until a request carrying it was taken.
final class CrashProbes: Sendable {
    private static let prefix = Array("crash-probe-".utf8)
    private static let digits = 6

    /// The message of probe `number`.
    static func message(_ number: Int) -> String { "crash-probe-" + String(format: "%06d", number) }

    /// The numbers of the probes in `body`.
    ///
    /// Found with `memchr` and `memcmp`, not the standard library's generic `ranges(of:)`: that took about 100 ms
    /// for a 360 KB body, so the benchmarks' receiver answered 1 000-line requests at about 10 000 lines a second
    /// per connection and measured itself instead of the daemon.
    static func numbers(in body: [UInt8]) -> [Int] {
        body.withUnsafeBytes { bytes -> [Int] in
            prefix.withUnsafeBytes { prefix -> [Int] in
                guard let base = bytes.baseAddress, let wanted = prefix.baseAddress, let first = prefix.first else {
                    return []
                }
                var numbers: [Int] = []
                var offset = 0
                while offset < bytes.count, let found = memchr(base + offset, Int32(first), bytes.count - offset) {
                    let start = base.distance(to: UnsafeRawPointer(found))
                    let end = start + prefix.count + digits
                    guard end <= bytes.count else { break }
                    if memcmp(base + start, wanted, prefix.count) == 0,
                        let number = Int(String(decoding: bytes[start + prefix.count..<end], as: UTF8.self))
                    {
                        numbers.append(number)
                    }
                    offset = start + 1
                }
                return numbers
            }
        }
    }

    /// When each probe's send was called, and when it returned (for logshipd, once the record is committed).
    private let sent = SentTimes()
    private let task: Task<Void, Never>

    /// Starts sending a probe every `interval` with `send`, at most `limit` of them, until ``stop()``.
    ///
    /// - Parameter send: Sends one message, blocking until the sender has taken it; runs on NIO's thread pool.
    init(every interval: Duration, limit: Int = 2_000, send: @escaping @Sendable (String) throws -> Void) {
        let sent = self.sent
        task = Task {
            for number in 0..<limit where !Task.isCancelled {
                let started = ContinuousClock.now
                do {
                    try await offloaded { try send(Self.message(number)) }
                    let now = ContinuousClock.now
                    sent.times.withLock { $0[number] = (started, now) }
                } catch {
                    print("  crash probe \(number) not sent: \(error)")
                }
                try? await Task.sleep(until: started + interval)  // the pace of the probes, not a wait for state
            }
        }
    }

    /// Probes sent through logshipd's control socket at `path`, as `logctl send --priority crash` sends them.
    convenience init(every interval: Duration, control path: String) {
        self.init(every: interval) { message in
            let response = try ControlClient(path: path).send(
                ControlRequest(command: .send, records: [Submission(message: message, priority: "crash")]))
            guard response.ok else { throw WaitTimeout(description: "refused: \(response.error ?? "?")") }
        }
    }

    /// Stops sending; returns how many were sent.
    @discardableResult
    func stop() async -> Int {
        task.cancel()
        await task.value
        return sent.times.withLock { $0.count }
    }

    /// How long each sent probe took to a request the receiver took, in milliseconds, in the order they were
    /// sent, from its send returning (or from the call, `fromCall`); and how many never arrived in one. Only the
    /// probes sent from `since` on, when it is given.
    func latencies(
        at receiver: RequestLogReceiver, fromCall: Bool = false, since: ContinuousClock.Instant? = nil
    ) -> (milliseconds: [Double], missing: Int) {
        let arrived = receiver.probeArrivals
        let sent = self.sent.times.withLock { $0 }
        var milliseconds: [Double] = []
        var missing = 0
        for (number, times) in sent.sorted(by: { $0.key < $1.key }) where since.map({ times.called >= $0 }) ?? true {
            guard let arrival = arrived[number] else {
                missing += 1
                continue
            }
            milliseconds.append((arrival - (fromCall ? times.called : times.returned)).seconds * 1000)
        }
        return (milliseconds, missing)
    }

    /// Waits until every probe sent has arrived in a request `receiver` took, or `timeout` has passed.
    func waitForArrivals(at receiver: RequestLogReceiver, within timeout: Duration) async {
        try? await eventually(within: timeout) { self.latencies(at: receiver).missing == 0 }
    }

    private final class SentTimes: Sendable {
        let times = Mutex<[Int: (called: ContinuousClock.Instant, returned: ContinuousClock.Instant)]>([:])
    }

    /// The `fraction` percentile (0…1) of `values`, nearest rank; 0 when there are none.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * fraction).rounded(.up)) - 1))]
    }
}
