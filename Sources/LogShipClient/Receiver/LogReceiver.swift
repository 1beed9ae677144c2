#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A small HTTP server that accepts batches in every format logshipd posts (NDJSON, a JSON array, OTLP/HTTP in
/// protobuf or JSON, a Loki push, journal export format, each gzip- or zstd-compressed or not) and journal export
/// format as `systemd-journal-upload` posts it: `logctl receive`, and the remote in the tests and the benchmark.
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
        /// Whether to close the connection instead of answering the request with this sequence number, once it is
        /// read and reported: a remote that stored a request and then went away (a crash, a reset) before its answer.
        public var closesUnanswered: (@Sendable (_ sequence: Int) -> Bool)?
        /// Whether to decode records; a benchmark's receiver only counts them (NDJSON lines, export entries), so
        /// that it is not the bottleneck it measures.
        public var decodesRecords = true
        /// Whether each ``Request`` keeps its body (decompressed), for a test to hand to another parser.
        public var keepsBodies = false

        public init(
            delay: Duration = .zero, failureRate: Double = 0, failureStatus: Int = 503, retryAfter: Int? = nil,
            decide: (@Sendable (_ sequence: Int, _ records: [LogRecord]) -> Int?)? = nil,
            hold: (@Sendable (_ sequence: Int) async -> Void)? = nil,
            holdBody: (@Sendable (_ sequence: Int) async -> Void)? = nil,
            closesUnanswered: (@Sendable (_ sequence: Int) -> Bool)? = nil
        ) {
            self.delay = delay
            self.failureRate = failureRate
            self.failureStatus = failureStatus
            self.retryAfter = retryAfter
            self.decide = decide
            self.hold = hold
            self.holdBody = holdBody
            self.closesUnanswered = closesUnanswered
        }
    }

    /// One request as it arrived.
    public struct Request: Sendable {
        /// 0 for the first request, in the order request heads arrived.
        public var sequence: Int
        public var records: [LogRecord]
        /// The id logshipd gave each of ``records`` (in their order), `nil` for one sent without.
        public var recordIDs: [String?]
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
        /// The request's path, query included.
        public var path: String
        /// The format the body was read as (`ndjson`, `json`, `otlp`, `otlp-json`, `loki`, `journal`).
        public var format: String
        /// The `Content-Encoding` header, if any.
        public var contentEncoding: String?
        /// Every header of the request, as it arrived.
        public var headers: HTTPHeaders
        /// The body's size as it arrived, before decompression.
        public var bodyBytes: Int
        /// The decompressed body, when the behavior keeps bodies.
        public var body: [UInt8]?
    }

    private static let maximumBodyBytes = 256 << 20

    private let server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
    private let behavior: Behavior
    private let onRequest: @Sendable (Request) -> Void
    private let counters = Mutex(Statistics())
    /// The connections accepted and not yet closed: what ``stop()`` closes.
    private let served: ServedConnections
    private let logger: Logger

    /// The address the receiver listens on (with the port chosen when 0 was asked for).
    public let address: SocketAddress
    /// `https` when it serves TLS, else `http`.
    public let scheme: String

    /// Binds `host:port`.
    ///
    /// - Parameters:
    ///   - tls: Serve HTTPS with this server configuration (for mutual TLS, one that requires and verifies client
    ///     certificates); plain HTTP when `nil`.
    ///   - onRequest: Called for every request once its body is read, before the answer is sent.
    /// - Throws: When the TLS configuration's files cannot be used or the address cannot be bound.
    public init(
        host: String,
        port: Int,
        tls: TLSConfiguration? = nil,
        behavior: Behavior = Behavior(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "logship.receiver"),
        onRequest: @escaping @Sendable (Request) -> Void
    ) async throws {
        let sslContext = try tls.map { try NIOSSLContext(configuration: $0) }
        let served = ServedConnections()
        do {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let sslContext {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                        }
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        let connection = try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                            wrappingChannelSynchronously: channel)
                        // Known from the moment it is accepted, not from when ``run()`` gets to it, so that a stop
                        // closes also a connection accepted just before it, which the client would otherwise wait
                        // on. One accepted after the stop began is closed at once (a failed initializer would end
                        // ``run()`` with an error).
                        if !served.insert(channel) { channel.close(promise: nil) }
                        channel.closeFuture.whenComplete { _ in served.remove(channel) }
                        return connection
                    }
                }
        } catch {
            throw ListenError(host: host, port: port, underlying: error)
        }
        guard let address = server.channel.localAddress else { throw ChannelError.unknownLocalAddress }
        self.address = address
        self.scheme = tls == nil ? "http" : "https"
        self.served = served
        self.behavior = behavior
        self.onRequest = onRequest
        self.logger = logger
    }

    /// The URL logshipd should post to.
    public var url: String {
        "\(scheme)://\(address.ipAddress ?? "127.0.0.1"):\(address.port ?? 0)/ingest"
    }

    public var statistics: Statistics { counters.withLock { $0 } }

    /// Serves connections until ``stop()`` is called (or the task is cancelled, when the process is ending).
    ///
    /// Accepting and each connection's exchange run on event loops, not the cooperative pool: a receiver sharing a
    /// process with busy tasks (the tests', or `logctl receive` under a load of its own) still answers at once.
    public func run() async throws {
        try await withTaskExecutorPreference(EventLoopTaskExecutor(server.channel.eventLoop)) {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        group.addTask(executorPreference: EventLoopTaskExecutor(connection.channel.eventLoop)) {
                            await self.serve(connection)
                        }
                    }
                }
            }
        }
    }

    /// Stops accepting and closes the connections being served; ``run()`` returns once each has ended.
    ///
    /// Closing, not cancelling: a connection accepted but not yet handed to ``run()``'s loop would be dropped
    /// unfinished by a cancelled loop, which NIO traps on (`Deinited NIOAsyncWriter without calling finish()`).
    /// Every connection accepted is closed here, also one ``run()`` has not got to yet. A second stop does nothing:
    /// its loop may have been shut down since the first.
    public func stop() {
        guard served.closeAll() else { return }
        server.channel.close(promise: nil)
    }

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        counters.withLock { $0.connections += 1 }
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
                            head: requestHead, body: body, sequence: sequence, inFlight: inFlight, arrivedAt: arrivedAt)
                        let responseBody = "logctl receive answered \(status)\n"
                        var responseHead = HTTPResponseHead(
                            version: requestHead.version, status: .init(statusCode: status))
                        responseHead.headers.add(name: "Content-Length", value: String(responseBody.utf8.count))
                        responseHead.headers.add(
                            name: "Connection", value: requestHead.isKeepAlive ? "keep-alive" : "close")
                        if let retryAfter = behavior.retryAfter, !(200...299).contains(status) {
                            responseHead.headers.add(name: "Retry-After", value: String(retryAfter))
                        }
                        // Answered or not (the client may close as soon as it has read the answer), the request is
                        // no longer in flight.
                        defer { counters.withLock { $0.inFlight -= 1 } }
                        head = nil
                        if behavior.closesUnanswered?(sequence) == true { return }
                        try await writer.write(.head(responseHead))
                        await behavior.holdBody?(sequence)
                        try await writer.write(.body(.byteBuffer(ByteBuffer(string: responseBody))))
                        try await writer.write(.end(nil))
                        if !requestHead.isKeepAlive { return }
                    }
                }
                if head != nil { counters.withLock { $0.inFlight -= 1 } }
            }
        } catch {
            logger.debug("receiver connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// Decodes the batch in its format, reports it, waits the configured delay, and picks the status: 400 when the
    /// body cannot be decompressed.
    private func answer(
        head: HTTPRequestHead, body: ByteBuffer, sequence: Int, inFlight: Int, arrivedAt: ContinuousClock.Instant
    ) async -> Int {
        let decoder = RequestBodyDecoder(maximumBytes: Self.maximumBodyBytes, decodesRecords: behavior.decodesRecords)
        let contentEncoding = head.headers.first(name: "Content-Encoding")
        var decoded = RequestBodyDecoder.Decoded()
        var format = RequestBodyDecoder.Format.ndjson
        var refusal: Int?
        var keptBody: [UInt8]?
        do {
            let plain = try decoder.decompressed(body, contentEncoding: contentEncoding)
            if behavior.keepsBodies { keptBody = Array(plain.readableBytesView) }
            format = RequestBodyDecoder.Format(
                path: head.uri, contentType: head.headers.first(name: "Content-Type"), body: plain)
            decoded = decoder.decode(plain, as: format)
        } catch {
            logger.warning("receiver: request body refused", metadata: ["error": "\(error)"])
            decoded.malformed = 1
            refusal = 400
        }
        let fails = behavior.failureRate > 0 && Double.random(in: 0..<1) < behavior.failureRate
        let status = refusal ?? behavior.decide?(sequence, decoded.records) ?? (fails ? behavior.failureStatus : 200)
        onRequest(
            Request(
                sequence: sequence, records: decoded.records, recordIDs: decoded.ids, recordCount: decoded.count,
                malformedLines: decoded.malformed,
                status: status, inFlightAtArrival: inFlight, arrivedAt: arrivedAt,
                batch: head.headers.first(name: "X-Logshipd-Batch").flatMap { Int($0) },
                authorization: head.headers.first(name: "Authorization"), path: head.uri, format: format.rawValue,
                contentEncoding: contentEncoding, headers: head.headers, bodyBytes: body.readableBytes, body: keptBody))
        if behavior.delay > .zero {
            try? await Task.sleep(for: behavior.delay)
        }
        await behavior.hold?(sequence)
        return status
    }
}

extension LogReceiver {
    /// A server TLS configuration from PEM files: the certificate chain and its key, and, for mutual TLS, the CA
    /// that client certificates must be issued by (a client without one is refused).
    ///
    /// - Throws: When a file cannot be read or parsed.
    public static func serverTLS(certificateFile: String, keyFile: String, clientCAFile: String? = nil) throws
        -> TLSConfiguration
    {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem)))
        if let clientCAFile {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(clientCAFile))
            configuration.certificateVerification = .noHostnameVerification
        }
        return configuration
    }
}
