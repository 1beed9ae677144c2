import Foundation
import LogShip
import LogShipTestKit
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The throttling benchmarks' remote: an HTTP/1.1 server on loopback that notes, of every request, when its body
/// had arrived, who sent it (the path's last part, `/ingest/17`), its body bytes and lines, whether it took it,
/// and the crash probes it carried; it answers 200, after a delay if asked, or 429 without `Retry-After` when a
/// budget of lines is spent.
///
/// Like ``CountingReceiver`` it answers on the connection's event loop, on two threads, and keeps a body only
/// while it looks for crash probes in it.
final class RequestLogReceiver: Sendable {
    /// One request, as the receiver judged it.
    struct Request: Sendable {
        /// When its body had arrived (the request was judged then).
        var arrivedAt: ContinuousClock.Instant
        var sender: Int
        var bodyBytes: Int
        var lines: Int
        /// Answered 200; otherwise 429, and its lines did not count.
        var accepted: Bool
        /// The crash probes it carried (``CrashProbes``).
        var probes: [Int]
    }

    /// A token bucket of lines: a request whose lines are not all in it is refused with 429 and takes none.
    struct LineBudget: Sendable {
        var perSecond: Double
        /// What it holds after a quiet spell, and when it starts.
        var burst: Double
    }

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let log: Log
    let port: Int

    /// Binds 127.0.0.1:`port` (0: any free port), with `SO_REUSEADDR`, so that it may take a port a
    /// `PortReservation` holds.
    ///
    /// - Parameters:
    ///   - delay: How long to wait before answering each request.
    ///   - budget: The lines it takes per second; every request when `nil`.
    ///   - probedSender: The sender whose bodies are searched for crash probes; every sender's when `nil`.
    init(port: Int = 0, delay: Duration = .zero, budget: LineBudget? = nil, probedSender: Int? = nil) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let log = Log(budget: budget)
        let delay = TimeAmount.nanoseconds(Int64(delay.seconds * 1_000_000_000))
        do {
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(
                            RequestLogHandler(log: log, delay: delay, probedSender: probedSender))
                    }
                }
                .bind(host: "127.0.0.1", port: port)
                .get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.log = log
        self.port = channel.localAddress?.port ?? port
    }

    /// The URL sender number `sender` posts to.
    static func url(port: Int, sender: Int) -> String { "http://127.0.0.1:\(port)/ingest/\(sender)" }

    /// Every request so far, in the order they were judged.
    var requests: [Request] { log.state.withLock { $0.requests } }

    /// Lines taken so far that are not crash probes: the backlog's.
    var acceptedBacklogLines: Int { log.state.withLock { $0.acceptedBacklogLines } }

    /// When each crash probe first arrived in a request the receiver took.
    var probeArrivals: [Int: ContinuousClock.Instant] { log.state.withLock { $0.probeArrivals } }

    /// Waits until the receiver has taken `lines` of the backlog, or throws after `timeout`.
    func waitFor(backlogLines lines: Int, within timeout: Duration) async throws {
        do {
            try await eventually(within: timeout) { self.acceptedBacklogLines >= lines }
        } catch {
            throw WaitTimeout(
                description: "the receiver took \(acceptedBacklogLines) of \(lines) lines within \(timeout)")
        }
    }

    /// Writes every request as a line of CSV (seconds from `origin`, sender, body bytes, lines, status, probes) to
    /// the file `LOGSHIPD_BENCH_DUMP` names with `name` appended, if it is set: for a closer look at one run.
    func dump(_ name: String, from origin: ContinuousClock.Instant) {
        guard let prefix = ProcessInfo.processInfo.environment["LOGSHIPD_BENCH_DUMP"] else { return }
        let lines = requests.map { request in
            String(format: "%.6f,%d,%d,%d,%d,", (request.arrivedAt - origin).seconds, request.sender, request.bodyBytes,
                   request.lines, request.accepted ? 200 : 429) + request.probes.map(String.init).joined(separator: " ")
        }
        try? (["seconds,sender,bytes,lines,status,probes"] + lines).joined(separator: "\n")
            .write(toFile: prefix + name, atomically: true, encoding: .utf8)
    }

    /// Closes the listening socket and the connections, and stops the loops.
    func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// What every connection's handler writes to.
    fileprivate final class Log: Sendable {
        struct State {
            var requests: [Request] = []
            var acceptedBacklogLines = 0
            var probeArrivals: [Int: ContinuousClock.Instant] = [:]
            /// The line budget's bucket, full at the start.
            var lines: TokenBucket?
        }

        let state: Mutex<State>

        init(budget: LineBudget?) {
            state = Mutex(State(lines: budget.map {
                TokenBucket(rate: $0.perSecond, capacity: $0.burst, level: $0.burst, now: .now)
            }))
        }

        /// Judges a request whose body has arrived, notes it, and returns whether it is taken.
        func judge(sender: Int, bodyBytes: Int, lines: Int, probes: [Int]) -> Bool {
            let now = ContinuousClock.now
            return state.withLock { state in
                var accepted = true
                if let bucket = state.lines {
                    accepted = Double(lines) <= bucket.tokens(at: now)
                    if accepted { state.lines?.debit(Double(lines), now: now) }
                }
                // A syslog-ng request carries its probe lines among backlog lines.
                if accepted { state.acceptedBacklogLines += lines - probes.count }
                for number in probes where accepted && state.probeArrivals[number] == nil {
                    state.probeArrivals[number] = now
                }
                state.requests.append(Request(
                    arrivedAt: now, sender: sender, bodyBytes: bodyBytes, lines: lines, accepted: accepted,
                    probes: probes))
                return accepted
            }
        }
    }
}

/// Reads one connection's requests, has the log judge each, and answers.
private final class RequestLogHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart

    private let log: RequestLogReceiver.Log
    private let delay: TimeAmount
    private let probedSender: Int?
    private var keepAlive = true
    private var sender = 0
    private var bytes = 0
    private var tally = LineTally()
    /// The body so far, while it is searched for crash probes.
    private var body: [UInt8]?

    init(log: RequestLogReceiver.Log, delay: TimeAmount, probedSender: Int?) {
        self.log = log
        self.delay = delay
        self.probedSender = probedSender
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = head.isKeepAlive
            sender = head.uri.split(separator: "/").last.flatMap { Int($0) } ?? 0
            bytes = 0
            tally = LineTally()
            body = probedSender == nil || probedSender == sender ? [] : nil
        case .body(let part):
            bytes += part.readableBytes
            tally.add(part.readableBytesView)
            body?.append(contentsOf: part.readableBytesView)
        case .end:
            let accepted = log.judge(
                sender: sender, bodyBytes: bytes, lines: tally.lines, probes: body.map(CrashProbes.numbers(in:)) ?? [])
            body = nil
            answer(accepted ? .ok : .tooManyRequests, keepAlive: keepAlive, after: delay, context: context)
        }
    }
}
