import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A small HTTP server that accepts NDJSON batches as logshipd posts them (and journal export format, as
/// `systemd-journal-upload` posts it): `logctl receive`, and the remote in the tests and the benchmark.
///
/// It counts requests in flight, numbers requests in the order they arrive, and can be told to answer slowly or
/// to fail a share of requests, so it doubles as a misbehaving remote.
public final class LogReceiver: Sendable {
    /// How the receiver answers.
    public struct Behavior: Sendable {
        /// How long to wait before answering each request.
        public var delay: Duration = .zero
        /// The share of requests (0…1) answered with ``failureStatus``.
        public var failureRate: Double = 0
        public var failureStatus: Int = 503
        /// `Retry-After` seconds sent with every answer that is not 2xx.
        public var retryAfter: Int?
        /// Picks the status of a request from its sequence number and records, before the failure rate is
        /// applied; `nil` leaves the request to the failure rate.
        public var decide: (@Sendable (_ sequence: Int, _ records: [LogRecord]) -> Int?)?
        /// Awaited before answering each request, after it is reported and after ``delay``: holds a request in
        /// flight for as long as the caller wants (a test's gate, a remote that hangs).
        public var hold: (@Sendable (_ sequence: Int) async -> Void)?
        /// Awaited after the response head is sent and before its body: a remote that answers and then stalls.
        public var holdBody: (@Sendable (_ sequence: Int) async -> Void)?
        /// Whether to decode records; a benchmark's receiver only counts them (NDJSON lines, export entries), so
        /// that it is not the bottleneck it measures.
        public var decodesRecords = true

        public init(
            delay: Duration = .zero, failureRate: Double = 0, failureStatus: Int = 503, retryAfter: Int? = nil,
            decide: (@Sendable (_ sequence: Int, _ records: [LogRecord]) -> Int?)? = nil,
            hold: (@Sendable (_ sequence: Int) async -> Void)? = nil,
            holdBody: (@Sendable (_ sequence: Int) async -> Void)? = nil
        ) {
            self.delay = delay
            self.failureRate = failureRate
            self.failureStatus = failureStatus
            self.retryAfter = retryAfter
            self.decide = decide
            self.hold = hold
            self.holdBody = holdBody
        }
    }

    /// One request as it arrived.
    public struct Request: Sendable {
        /// 0 for the first request, in the order request heads arrived.
        public var sequence: Int
        public var records: [LogRecord]
        /// How many records the request carried: decoded or, when the receiver only counts, counted.
        public var recordCount: Int
        /// Lines that did not decode as records.
        public var malformedLines: Int
        /// The status the receiver answers with.
        public var status: Int
        /// How many requests were in flight when this one arrived, itself included.
        public var inFlightAtArrival: Int
        /// When its head arrived.
        public var arrivedAt: ContinuousClock.Instant
        /// The sender's claim number (`X-Logshipd-Batch`), if it sent one.
        public var batch: Int?
        /// The `Authorization` header, if any.
        public var authorization: String?
    }

    /// Counts since start.
    public struct Statistics: Hashable, Sendable {
        public var requests = 0
        public var inFlight = 0
        public var maximumInFlight = 0
    }

    private static let maximumBodyBytes = 256 << 20

    private let server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
    private let behavior: Behavior
    private let onRequest: @Sendable (Request) -> Void
    private let counters = Mutex(Statistics())
    private let logger: Logger

    /// The address the receiver listens on (with the port chosen when 0 was asked for).
    public let address: SocketAddress

    /// Binds `host:port`.
    ///
    /// - Parameters:
    ///   - onRequest: Called for every request once its body is read, before the answer is sent.
    public init(
        host: String,
        port: Int,
        behavior: Behavior = Behavior(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "logship.receiver"),
        onRequest: @escaping @Sendable (Request) -> Void
    ) async throws {
        server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        guard let address = server.channel.localAddress else { throw ChannelError.unknownLocalAddress }
        self.address = address
        self.behavior = behavior
        self.onRequest = onRequest
        self.logger = logger
    }

    /// The URL logshipd should post to.
    public var url: String {
        "http://\(address.ipAddress ?? "127.0.0.1"):\(address.port ?? 0)/ingest"
    }

    public var statistics: Statistics { counters.withLock { $0 } }

    /// Serves connections until the task is cancelled.
    public func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask { await self.serve(connection) }
                }
            }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        do {
            try await connection.executeThenClose { parts, writer in
                var head: HTTPRequestHead?
                var body = ByteBuffer()
                var sequence = 0
                var inFlight = 0
                var arrivedAt = ContinuousClock.now
                for try await part in parts {
                    switch part {
                    case .head(let requestHead):
                        head = requestHead
                        body.clear()
                        arrivedAt = .now
                        (sequence, inFlight) = counters.withLock { counters in
                            defer { counters.requests += 1 }
                            counters.inFlight += 1
                            counters.maximumInFlight = max(counters.maximumInFlight, counters.inFlight)
                            return (counters.requests, counters.inFlight)
                        }
                    case .body(var chunk):
                        if body.readableBytes + chunk.readableBytes <= Self.maximumBodyBytes {
                            body.writeBuffer(&chunk)
                        }
                    case .end:
                        guard let requestHead = head else { continue }
                        let status = await answer(
                            body: body, sequence: sequence, inFlight: inFlight, arrivedAt: arrivedAt,
                            batch: requestHead.headers.first(name: "X-Logshipd-Batch").flatMap { Int($0) },
                            isJournalExport: requestHead.headers.first(name: "Content-Type")?
                                .hasPrefix("application/vnd.fdo.journal") == true,
                            authorization: requestHead.headers.first(name: "Authorization"))
                        let responseBody = "logctl receive answered \(status)\n"
                        var responseHead = HTTPResponseHead(version: requestHead.version, status: .init(statusCode: status))
                        responseHead.headers.add(name: "Content-Length", value: String(responseBody.utf8.count))
                        responseHead.headers.add(name: "Connection", value: requestHead.isKeepAlive ? "keep-alive" : "close")
                        if let retryAfter = behavior.retryAfter, !(200...299).contains(status) {
                            responseHead.headers.add(name: "Retry-After", value: String(retryAfter))
                        }
                        try await writer.write(.head(responseHead))
                        await behavior.holdBody?(sequence)
                        try await writer.write(.body(.byteBuffer(ByteBuffer(string: responseBody))))
                        try await writer.write(.end(nil))
                        counters.withLock { $0.inFlight -= 1 }
                        head = nil
                        if !requestHead.isKeepAlive { return }
                    }
                }
                if head != nil { counters.withLock { $0.inFlight -= 1 } }
            }
        } catch {
            logger.debug("receiver connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// Decodes the batch (NDJSON, or journal export format as `systemd-journal-upload` sends it), reports it,
    /// waits the configured delay, and picks the status.
    private func answer(
        body: ByteBuffer, sequence: Int, inFlight: Int, arrivedAt: ContinuousClock.Instant, batch: Int?,
        isJournalExport: Bool, authorization: String?
    ) async -> Int {
        var records: [LogRecord] = []
        var malformed = 0
        var recordCount = 0
        if isJournalExport {
            let export = JournalExportDecoder.entries(in: body.readableBytesView)
            if behavior.decodesRecords { records = export.entries.map(JournalExportDecoder.record(from:)) }
            recordCount = export.entries.count
            malformed = export.malformed
        } else if !behavior.decodesRecords {
            recordCount = body.readableBytesView.count { $0 == UInt8(ascii: "\n") }
        } else {
            let decoder = JSONDecoder()
            for line in body.readableBytesView.split(separator: UInt8(ascii: "\n")) {
                if let record = try? decoder.decode(LogRecord.self, from: Data(line)) {
                    records.append(record)
                } else {
                    malformed += 1
                }
            }
        }
        if behavior.decodesRecords && !isJournalExport { recordCount = records.count }
        let fails = behavior.failureRate > 0 && Double.random(in: 0..<1) < behavior.failureRate
        let status = behavior.decide?(sequence, records) ?? (fails ? behavior.failureStatus : 200)
        onRequest(
            Request(sequence: sequence, records: records, recordCount: recordCount, malformedLines: malformed, status: status,
                    inFlightAtArrival: inFlight, arrivedAt: arrivedAt, batch: batch, authorization: authorization))
        if behavior.delay > .zero {
            try? await Task.sleep(for: behavior.delay)
        }
        await behavior.hold?(sequence)
        return status
    }
}
