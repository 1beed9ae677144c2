import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The side-by-side comparison's remote: an HTTP/1.1 server on loopback that counts the NDJSON lines (or the
/// records of another upload format, ``RecordCounting``, or Elasticsearch's documents) of every POST and answers,
/// after a fixed delay if asked, on the connection's event loop.
///
/// It does as little per request as an HTTP server can, so that the shippers compared are what is measured: no task
/// per request, no hop off the loop, the answer's head and end in one write. It has two threads, one per request a
/// shipper keeps in flight: on one, one-record requests kept it 70% busy and held both shippers back (measured:
/// syslog-ng 15 000 lines/s on one thread, 17 000-19 000 on two). `LogReceiver` (`logctl receive`, the tests'
/// remote) decodes and reports every request; here that cost was as large as a shipper's own and fell on the same
/// two cores.
final class CountingReceiver: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let lines: LineCount

    /// What the receiver's requests are.
    enum API: Sendable {
        /// Every request's body holds records, found by ``RecordCounting``; each is answered 200 with no body.
        case ingest(RecordCounting)
        /// Elasticsearch's, as rsyslog's omelasticsearch uses it (``ElasticsearchAnswer``): documents are counted.
        case elasticsearch
    }

    /// The port it listens on, on 127.0.0.1.
    let port: Int

    /// The URL the shippers post to.
    var url: String { "http://127.0.0.1:\(port)/ingest" }

    /// Binds an ephemeral port on 127.0.0.1.
    ///
    /// - Parameters:
    ///   - delay: How long to wait before answering each request (a slow remote).
    ///   - api: What the requests are, and so what is counted and how each is answered.
    init(delay: Duration = .zero, api: API = .ingest(.lines)) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let lines = LineCount()
        let delay = TimeAmount.nanoseconds(Int64(delay.seconds * 1_000_000_000))
        do {
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(
                            CountingHandler(lines: lines, delay: delay, api: api))
                    }
                }
                .bind(host: "127.0.0.1", port: 0)
                .get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.lines = lines
        port = channel.localAddress?.port ?? 0
    }

    /// Waits until at least `count` lines have arrived, or throws after `timeout`.
    func waitFor(lines count: Int, within timeout: Duration) async throws {
        try await lines.wait(for: count, within: timeout)
    }

    /// Closes the listening socket and the connections, and stops the loops.
    func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Counts one connection's lines (or records, or documents) and answers each request.
private final class CountingHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart

    private let lines: LineCount
    private let delay: TimeAmount
    private let api: CountingReceiver.API
    private var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/")
    private var tally = LineTally()
    /// The body so far, for a format whose records are counted in the whole body.
    private var body = ByteBuffer()

    init(lines: LineCount, delay: TimeAmount, api: CountingReceiver.API) {
        self.lines = lines
        self.delay = delay
        self.api = api
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            tally = LineTally()
            body.clear()
        case .body(var part):
            switch api {
            case .ingest(.lines), .elasticsearch: tally.add(part.readableBytesView)
            case .ingest: body.writeBuffer(&part)
            }
        case .end:
            switch api {
            case .ingest(.lines):
                lines.add(tally.lines)
                answer(.ok, keepAlive: head.isKeepAlive, after: delay, context: context)
            case .ingest(let counting):
                lines.add(counting.count(body))
                answer(.ok, keepAlive: head.isKeepAlive, after: delay, context: context)
            case .elasticsearch:
                let elasticsearch = ElasticsearchAnswer(method: head.method, uri: head.uri, bodyLines: tally.lines)
                lines.add(elasticsearch.documents)
                answer(
                    elasticsearch.status, body: elasticsearch.body, contentType: elasticsearch.contentType,
                    keepAlive: head.isKeepAlive, after: delay, context: context)
            }
        }
    }
}

/// The running line count, with one waiter for a total.
private final class LineCount: Sendable {
    private struct State {
        var count = 0
        var waiter: (target: Int, continuation: CheckedContinuation<Void, any Error>)?
        /// Set once the waiter's time is up, so that a wait registering after that fails at once.
        var expired = false
    }

    private let state = Mutex(State())

    func add(_ lines: Int) {
        let reached = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.count += lines
            guard let waiter = state.waiter, state.count >= waiter.target else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        reached?.resume()
    }

    func wait(for target: Int, within timeout: Duration) async throws {
        state.withLock { $0.expired = false }
        let deadline = Task {
            try await Task.sleep(for: timeout)
            let (waiter, counted) = state.withLock { state in
                defer { state.waiter = nil }
                state.expired = true
                return (state.waiter?.continuation, state.count)
            }
            waiter?.resume(throwing: CountingReceiverTimeout(target: target, counted: counted))
        }
        defer { deadline.cancel() }
        try await withCheckedThrowingContinuation { continuation in
            let outcome = state.withLock { state -> Result<Void, any Error>? in
                if state.count >= target { return .success(()) }
                if state.expired { return .failure(CountingReceiverTimeout(target: target, counted: state.count)) }
                state.waiter = (target, continuation)
                return nil
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }
}

/// The receiver did not count the lines it waited for in time.
struct CountingReceiverTimeout: Error, CustomStringConvertible {
    var target: Int
    var counted: Int
    var description: String { "the receiver counted \(counted) of \(target) lines before the deadline" }
}
