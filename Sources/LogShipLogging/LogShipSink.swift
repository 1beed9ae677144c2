#if canImport(Glibc)
import Glibc
#endif

/// Sends records to logshipd's datagram ingest socket from a thread of its own, so that logging never waits.
///
/// Records wait in a bounded buffer. While the daemon is away (restarting, not started yet) the sender keeps the
/// oldest record and tries again with a growing pause (up to two seconds); records that arrive while the buffer
/// is full are dropped and counted, and once the daemon takes records again a warning record says how many were
/// dropped. Under socket activation (`logshipd.socket`) the socket outlives the daemon, so a restart loses
/// nothing: datagrams wait in the kernel.
///
/// A sink and its thread live as long as the process: make one per process (``shared``, or one passed to every
/// handler), not one per logger.
public final class LogShipSink: @unchecked Sendable {
    // @unchecked: every stored property is either immutable or guarded by `mutex`.

    /// What the sink has done so far.
    public struct Statistics: Sendable, Equatable {
        /// Records taken by the daemon's socket.
        public var sent = 0
        /// Records dropped because the buffer was full, or too large for one datagram.
        public var dropped = 0
        /// Records waiting in the buffer.
        public var waiting = 0
    }

    /// One sink per process, to `$LOGSHIPD_INGEST_DATAGRAM` or `/run/logshipd/ingest.dgram`.
    public static let shared = LogShipSink(
        socketPath: getenv("LOGSHIPD_INGEST_DATAGRAM").map { String(cString: $0) } ?? "/run/logshipd/ingest.dgram")

    public let socketPath: String
    private let capacity: Int
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Signalled when a record is queued: the sending thread waits on it.
    private let queued: UnsafeMutablePointer<pthread_cond_t>
    /// Broadcast when records leave the buffer: ``flush(timeoutSeconds:)`` waits on it.
    private let drained: UnsafeMutablePointer<pthread_cond_t>
    // Guarded by `mutex`:
    private var buffer: [[UInt8]] = []
    private var head = 0
    private var statistics = Statistics()
    private var reportedDrops = 0

    /// Starts the sending thread.
    ///
    /// - Parameters:
    ///   - socketPath: logshipd's datagram ingest socket (`ingest.datagram`).
    ///   - capacity: The most records that wait; beyond it records are dropped and counted.
    public init(socketPath: String, capacity: Int = 10_000) {
        precondition(capacity > 0)
        self.socketPath = socketPath
        self.capacity = capacity
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        queued = .allocate(capacity: 1)
        pthread_cond_init(queued, nil)
        drained = .allocate(capacity: 1)
        pthread_cond_init(drained, nil)
        startSender()
    }

    /// Counts so far.
    public var currentStatistics: Statistics {
        locked {
            var statistics = statistics
            statistics.waiting = buffer.count - head
            return statistics
        }
    }

    /// Queues a record (a JSON line); drops it when the buffer is full. Never blocks on the daemon.
    func send(_ line: [UInt8]) {
        locked {
            if buffer.count - head < capacity {
                buffer.append(line)
            } else {
                statistics.dropped += 1
            }
        }
        // A drop is news too: the sending thread reports it.
        pthread_cond_signal(queued)
    }

    /// Waits until every queued record has been sent, at most `seconds`; true when the buffer is empty.
    public func flush(timeoutSeconds seconds: Double) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(seconds * 1_000_000_000) + deadline.tv_nsec
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while buffer.count > head {
            if pthread_cond_timedwait(drained, mutex, &deadline) == ETIMEDOUT { return buffer.count == head }
        }
        return true
    }

    // MARK: The sending thread

    private func startSender() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        // The thread never ends: sendForever() does not return, so the closure needs no return value.
        let result = pthread_create(&thread, nil, { context in
            let sink = Unmanaged<LogShipSink>.fromOpaque(context!).takeRetainedValue()
            sink.sendForever()
        }, context)
        precondition(result == 0, "LogShipSink: cannot start its thread (error \(result))")
        pthread_detach(thread)
    }

    private func sendForever() -> Never {
        let connection = DatagramConnection(path: socketPath)
        var pause = Pause()
        while true {
            let (line, dropReport) = nextLine()
            switch connection.send(dropReport?.line ?? line) {
            case .sent:
                pause.reset()
                locked {
                    if let dropReport {
                        reportedDrops += dropReport.dropped
                    } else {
                        head += 1
                        statistics.sent += 1
                        compactIfWorthIt()
                    }
                }
                pthread_cond_broadcast(drained)
            case .tooLarge:
                locked {
                    head += 1
                    statistics.dropped += 1
                    compactIfWorthIt()
                }
                pthread_cond_broadcast(drained)
            case .unavailable:
                pause.wait()
            }
        }
    }

    /// The oldest waiting record, and a report of drops not yet reported; waits while nothing is queued.
    private func nextLine() -> (line: [UInt8], dropReport: (line: [UInt8], dropped: Int)?) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while buffer.count == head && statistics.dropped == reportedDrops {
            pthread_cond_wait(queued, mutex)
        }
        let line = buffer.count > head ? buffer[head] : []
        guard statistics.dropped > reportedDrops else { return (line, nil) }
        let dropped = statistics.dropped - reportedDrops
        let report = JSONLine.record(
            message: "LogShipLogging dropped \(dropped) records: its buffer of \(capacity) was full "
                + "while logshipd was away, or a record was too large for a datagram",
            severity: 4, priority: nil,
            fields: [
                ("logship_logging_dropped", String(dropped)),
                ("logship_logging_dropped_total", String(statistics.dropped)),
            ])
        return (line, (report, dropped))
    }

    /// Drops sent records from the front of the buffer once they are half of it.
    private func compactIfWorthIt() {
        if head > 1024 && head * 2 > buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
    }

    private func locked<Result>(_ body: () -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}

/// A datagram socket connected to the daemon's, connected again when the daemon has gone.
private final class DatagramConnection {
    enum Outcome {
        case sent
        /// Larger than a datagram may be: it will never fit.
        case tooLarge
        /// No daemon, or its queue is full: try again later.
        case unavailable
    }

    private let path: String
    private var descriptor: Int32 = -1

    init(path: String) {
        self.path = path
    }

    func send(_ line: [UInt8]) -> Outcome {
        if descriptor < 0 && !connect() { return .unavailable }
        let result = line.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if result >= 0 { return .sent }
        switch errno {
        case EMSGSIZE:
            return .tooLarge
        case EINTR:
            return .unavailable
        default:
            // ECONNREFUSED, ENOTCONN, ENOENT: the daemon went away (its socket was replaced); connect again.
            close(descriptor)
            descriptor = -1
            return .unavailable
        }
    }

    private func connect() -> Bool {
        let candidate = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard candidate >= 0 else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(candidate)
            return false
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(candidate, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(candidate)
            return false
        }
        descriptor = candidate
        return true
    }
}

/// The pause between attempts while the daemon is away: 50 ms, doubling to 2 s.
private struct Pause {
    private var milliseconds = 50

    mutating func reset() {
        milliseconds = 50
    }

    mutating func wait() {
        usleep(UInt32(milliseconds * 1000))
        milliseconds = min(milliseconds * 2, 2000)
    }
}
