import Foundation
import LogShip
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A real `LogReceiver` on loopback that remembers every request in arrival order and lets a test wait for
/// what it expects.
public final class TestReceiver: Sendable {
    public let receiver: LogReceiver
    private let log = RequestLog()
    /// The receiver's run, which ends once its listening socket and every connection it served are closed.
    private let running: Task<Void, Never>

    /// Starts a receiver on 127.0.0.1, on `port` or an ephemeral one, serving HTTPS when `tls` is given.
    ///
    /// Each receiver has an event loop of its own: on NIO's singleton group (two threads here) it answered behind
    /// the in-process daemons of other tests, in full runs once more than 10 s late, and the daemon, timed out,
    /// sent the answered request again.
    public init(port: Int = 0, tls: TLSConfiguration? = nil, behavior: LogReceiver.Behavior = .init()) async throws {
        let log = self.log
        let loop = await startedEventLoopGroup()
        do {
            receiver = try await LogReceiver(
                host: "127.0.0.1", port: port, tls: tls, behavior: behavior, group: loop, logger: .test
            ) {
                log.append($0)
            }
        } catch {
            try? await loop.shutdownGracefully()
            throw error
        }
        let receiver = receiver
        // Runs until ``stop()`` or deinit stops the receiver; then its loop ends.
        running = Task {
            try? await receiver.run()
            try? await loop.shutdownGracefully()
        }
    }

    deinit {
        // Closed, not cancelled: see LogReceiver.stop().
        receiver.stop()
    }

    /// Stops the receiver, as a remote that goes down does, and returns once its port is free and no connection
    /// to it is left open: `LogReceiver.stop()` closes them on the receiver's loop, after it returns.
    public func stop() async {
        receiver.stop()
        await running.value
    }

    public var url: String { receiver.url }

    /// Requests in the order they arrived.
    public var requests: [LogReceiver.Request] { log.requests }

    /// Records in the order their requests arrived.
    public var records: [LogRecord] { requests.flatMap(\.records) }

    /// Records in the order the daemon claimed their batches (`X-Logshipd-Batch`), which is the order they were
    /// taken from the spool: with two requests in flight, arrival order may differ. Batch numbers start again
    /// with each daemon process, so `requests` picks the ones of one process.
    public func recordsInClaimOrder(of requests: some Sequence<LogReceiver.Request>) -> [LogRecord] {
        requests.sorted { ($0.batch ?? .max, $0.sequence) < ($1.batch ?? .max, $1.sequence) }.flatMap(\.records)
    }

    public var maximumInFlight: Int { receiver.statistics.maximumInFlight }

    /// Waits until `condition` holds for the requests received, or throws after `timeout`.
    public func waitUntil(
        within timeout: Duration = .seconds(180),
        _ condition: @escaping @Sendable ([LogReceiver.Request]) -> Bool
    ) async throws {
        try await log.waitUntil(within: timeout, condition)
    }

    /// Waits until at least `count` records have arrived.
    ///
    /// Kept apart from ``waitUntil(within:_:)``: the log counts records as they arrive, so a wait for tens of
    /// thousands of requests costs the receiver nothing per request (the benchmark's receiver must not be what is
    /// measured).
    public func waitFor(records count: Int, within timeout: Duration = .seconds(180)) async throws {
        try await log.waitUntil(within: timeout, .records(count))
    }
}

/// The requests a receiver saw, with waiters woken as requests arrive.
private final class RequestLog: Sendable {
    /// What a waiter waits for.
    enum Condition: Sendable {
        /// A test's condition over every request so far, evaluated after arrivals, off the receiver's loop.
        case requests(@Sendable ([LogReceiver.Request]) -> Bool)
        /// At least this many records, against the running count.
        case records(Int)
    }

    private struct State {
        var requests: [LogReceiver.Request] = []
        var recordCount = 0
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiterID: UInt64 = 0
        /// Waits that timed out before their waiter was registered.
        var abandoned: Set<UInt64> = []
        /// Whether an evaluation of the waiters' request conditions is due and not yet started.
        var isEvaluationDue = false

        /// Takes the waiters for at least `recordCount` records, now met.
        mutating func takeMetRecordWaiters() -> [CheckedContinuation<Void, Never>] {
            let met = waiters.filter {
                if case .records(let count) = $0.value.condition { recordCount >= count } else { false }
            }
            for id in met.keys { waiters[id] = nil }
            return met.values.map(\.continuation)
        }

        /// Whether an evaluation is to be started now: one is due and none is already waiting to start.
        mutating func schedulesEvaluation() -> Bool {
            guard !isEvaluationDue,
                waiters.values.contains(where: { if case .requests = $0.condition { true } else { false } })
            else { return false }
            isEvaluationDue = true
            return true
        }
    }

    private struct Waiter {
        var condition: Condition
        var continuation: CheckedContinuation<Void, Never>
    }

    private let state = Mutex(State())

    /// Records `request`. A test's conditions are not evaluated here, on the receiver's event loop: over every
    /// request at each arrival they cost the square of the requests, and with tens of thousands of one-record
    /// requests that stalled the loop, and every receiver sharing it, past a daemon's upload.timeout (which then
    /// sent answered requests again).
    func append(_ request: LogReceiver.Request) {
        let (ready, evaluates) = state.withLock { state in
            state.requests.append(request)
            state.recordCount += request.recordCount
            return (state.takeMetRecordWaiters(), state.schedulesEvaluation())
        }
        for continuation in ready { continuation.resume() }
        if evaluates { startEvaluation() }
    }

    /// Starts an evaluation on a thread of its own: it can take a while, and neither the receiver's loop nor the
    /// two threads of the cooperative pool that every test shares may wait for it.
    private func startEvaluation() {
        Thread.detachNewThread { self.evaluate() }
    }

    /// Evaluates the waiting request conditions once over the requests so far, and resumes those that hold;
    /// arrivals meanwhile schedule the next evaluation.
    private func evaluate() {
        let (requests, conditions) = state.withLock { state in
            state.isEvaluationDue = false
            return (
                state.requests,
                state.waiters.compactMapValues { waiter -> (@Sendable ([LogReceiver.Request]) -> Bool)? in
                    if case .requests(let holds) = waiter.condition { holds } else { nil }
                }
            )
        }
        let held = conditions.filter { $0.value(requests) }.keys
        let ready = state.withLock { state in held.compactMap { state.waiters.removeValue(forKey: $0)?.continuation } }
        for continuation in ready { continuation.resume() }
    }

    var requests: [LogReceiver.Request] {
        // Sorted outside the lock, which the receiver's loop takes at each arrival.
        state.withLock { $0.requests }.sorted { $0.sequence < $1.sequence }
    }

    /// Waits until `condition` holds for the requests received, or fails the wait after `timeout`.
    func waitUntil(
        within timeout: Duration = .seconds(180),
        _ condition: @escaping @Sendable ([LogReceiver.Request]) -> Bool
    ) async throws {
        try await waitUntil(within: timeout, .requests(condition))
    }

    /// Waits until `condition` holds, or fails the wait after `timeout`.
    func waitUntil(within timeout: Duration, _ condition: Condition) async throws {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let (ready, evaluates) = self.state.withLock { state in
                        if state.abandoned.remove(id) != nil { return ([continuation], false) }
                        state.waiters[id] = Waiter(condition: condition, continuation: continuation)
                        return (state.takeMetRecordWaiters(), state.schedulesEvaluation())
                    }
                    for continuation in ready { continuation.resume() }
                    if evaluates { self.startEvaluation() }
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)  // the deadline, not synchronisation
                throw WaitTimeout(description: "receiver condition not met within \(timeout)")
            }
            defer { group.cancelAll() }
            do {
                try await group.next()
            } catch {
                // Release the waiting child so the group can end.
                let waiter = self.state.withLock { state in
                    let waiter = state.waiters.removeValue(forKey: id)
                    if waiter == nil { state.abandoned.insert(id) }
                    return waiter
                }
                waiter?.continuation.resume()
                throw error
            }
        }
    }
}

/// A loopback port held for a remote that is down now and started later: bound, never listening, so that a
/// connection to it is refused, and so that no other socket of the machine picks it meanwhile.
///
/// It sets `SO_REUSEADDR`, as ``TestReceiver`` does: a receiver can bind the port while it is still held, and then
/// ``release()`` it without a moment in which another socket could take it.
public final class PortReservation: Sendable {
    public let port: Int
    private let held: Mutex<Int32?>

    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw WaitTimeout(description: "no socket: \(String(cString: strerror(errno)))") }
        var reuse: Int32 = 1
        var address = loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size)) == 0
            && withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
                }
            }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw WaitTimeout(description: "no free port: \(reason)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        held = Mutex(descriptor)
    }

    /// Lets the port go, once whatever was to listen there does (or is about to bind it itself).
    public func release() {
        if let descriptor = held.withLock({ $0.take() }) { close(descriptor) }
    }

    deinit { release() }
}

/// Whether something accepts TCP connections on loopback `port`: for waiting until a server started as a child
/// process listens.
public func acceptsConnections(port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = loopbackAddress(port: port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// 127.0.0.1:`port` (0 to let `bind` choose).
private func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}

extension LogReceiver.Request {
    /// One line saying what arrived and how, for a failed expectation's message: the batch number, the status
    /// answered, the authorization, and each record's id and message.
    public var summary: String {
        let records = zip(records, recordIDs).map { "\($1 ?? "no id") \($0.message)" }
        return "#\(sequence) batch \(batch.map(String.init) ?? "-") status \(status) "
            + "auth \(authorization ?? "-"): \(records.joined(separator: ", "))"
    }
}
