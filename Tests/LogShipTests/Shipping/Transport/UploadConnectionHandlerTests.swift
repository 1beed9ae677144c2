import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

@testable import LogShip

/// The client, its exchanges and the connection handler over testing channels: the bytes a remote sends, split,
/// cut short or malformed, on a loop whose clock the test moves. The time limit catches a hang, not slowness: each
/// test takes milliseconds, yet in a full run at load 15-30 eleven of them ran past a limit of one minute.
@Suite("Upload connection handler", .timeLimit(.minutes(5)))
struct UploadConnectionHandlerTests {
    struct ConnectionReset: Error {}
    struct NoChannelPrepared: Error {}

    /// A client on a testing loop; each connection it opens is the next channel the test prepared.
    final class Remote: Sendable {
        let loop = NIOAsyncTestingEventLoop()
        let client: UploadClient
        private let channels = Channels()

        /// The channels prepared and not yet taken, and how many were taken.
        final class Channels: Sendable {
            let state = Mutex((prepared: [NIOAsyncTestingChannel](), opened: 0))
        }

        init() throws {
            let channels = self.channels
            let loop = self.loop
            client = try UploadClient(
                endpoint: #require(UploadEndpoint(url: "http://logs.example:8514/ingest")), eventLoop: loop
            ) { _ in
                let next = channels.state.withLock { state -> NIOAsyncTestingChannel? in
                    guard !state.prepared.isEmpty else { return nil }
                    state.opened += 1
                    return state.prepared.removeFirst()
                }
                guard let next else { return loop.makeFailedFuture(NoChannelPrepared()) }
                return loop.makeSucceededFuture(next)
            }
        }

        /// How many connections the client opened.
        var connections: Int { channels.state.withLock { $0.opened } }

        /// A connected channel with the pipeline the client's own connections have (but TLS and idle detection),
        /// which the client's next connect gets.
        func prepareConnection() async throws -> NIOAsyncTestingChannel {
            let channel = NIOAsyncTestingChannel(loop: loop)
            try await loop.executeInContext {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(UploadConnectionHandler())
            }
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8514))
            channels.state.withLock { $0.prepared.append(channel) }
            return channel
        }

        func post(_ body: String = "{}\n", timeout: TimeAmount = .seconds(10)) async throws -> UploadResponse {
            try await client.post(
                headers: ["Content-Type": "application/x-ndjson"], body: ByteBuffer(string: body), timeout: timeout,
                excerptLimit: 16)
        }
    }

    /// The bytes of the request written on `channel`, waiting for the first of them.
    static func request(on channel: NIOAsyncTestingChannel) async throws -> String {
        var text = ""
        var part: IOData? = try await channel.waitForOutboundWrite(as: IOData.self)
        while let data = part {
            if case .byteBuffer(let buffer) = data { text += String(buffer: buffer) }
            part = try await channel.readOutbound(as: IOData.self)
        }
        return text
    }

    /// The remote's bytes, in reads as given.
    static func answer(_ channel: NIOAsyncTestingChannel, _ reads: String...) async throws {
        for read in reads { try await channel.writeInbound(ByteBuffer(string: read)) }
    }

    @Test("a response split across reads arrives whole; its kept-alive connection carries the next request")
    func splitResponse() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let first = Task { try await remote.post("{\"m\":1}\n") }
        let request = try await Self.request(on: channel)
        #expect(request.hasPrefix("POST /ingest HTTP/1.1\r\n"))
        #expect(request.contains("Host: logs.example:8514\r\n") && request.contains("Content-Length: 8\r\n"))
        #expect(request.hasSuffix("\r\n\r\n{\"m\":1}\n"))
        try await Self.answer(channel, "HTTP/1.1 200 OK\r\nContent-Le", "ngth: 10\r\n\r\naccep", "ted 1")
        let response = try await first.value
        #expect(response.status == 200 && String(decoding: response.excerpt, as: UTF8.self) == "accepted 1")

        let second = Task { try await remote.post() }
        _ = try await Self.request(on: channel)
        try await Self.answer(channel, "HTTP/1.1 204 No Content\r\n\r\n")
        #expect(try await second.value.status == 204)
        #expect(remote.connections == 1, "one connection for both requests")
    }

    @Test("a response without keep-alive closes its connection; the next request opens another")
    func withoutKeepAlive() async throws {
        let remote = try Remote()
        let first = try await remote.prepareConnection()
        let second = try await remote.prepareConnection()
        let response = Task { try await remote.post() }
        _ = try await Self.request(on: first)
        try await Self.answer(first, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        #expect(try await response.value.status == 200)
        try #require(!first.isActive, "closed, not kept")

        let next = Task { try await remote.post() }
        _ = try await Self.request(on: second)
        try await Self.answer(second, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try await next.value.status == 200)
        #expect(remote.connections == 2)
    }

    @Test("a kept connection the remote closes before answering: the request goes once more, on a new connection")
    func retriedOnNewConnection() async throws {
        let remote = try Remote()
        let kept = try await remote.prepareConnection()
        let first = Task { try await remote.post() }
        _ = try await Self.request(on: kept)
        try await Self.answer(kept, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        _ = try await first.value

        let fresh = try await remote.prepareConnection()
        let second = Task { try await remote.post("again\n") }
        _ = try await Self.request(on: kept)
        try await kept.close()
        #expect(try await Self.request(on: fresh).hasSuffix("\r\n\r\nagain\n"))
        try await Self.answer(fresh, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try await second.value.status == 200)
        #expect(remote.connections == 2)
    }

    @Test("a new connection closed before any answer fails the request, which is not sent again")
    func closedBeforeAnswer() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let response = Task { try await remote.post() }
        _ = try await Self.request(on: channel)
        try await channel.close()
        await #expect(throws: UploadClientError.connectionClosed(responseStarted: false)) { try await response.value }
        #expect(remote.connections == 1)
    }

    @Test("a connection closed in the middle of a body of known length fails the request with the decoder's error")
    func closedMidBody() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let response = Task { try await remote.post() }
        _ = try await Self.request(on: channel)
        try await Self.answer(channel, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nacc")
        try await channel.close()
        await #expect(throws: HTTPParserError.invalidEOFState) { try await response.value }
    }

    @Test("an error on the connection fails the request with that error and closes the connection")
    func errorCaught() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let response = Task { try await remote.post() }
        _ = try await Self.request(on: channel)
        try await remote.loop.executeInContext { channel.pipeline.fireErrorCaught(ConnectionReset()) }
        await #expect(throws: ConnectionReset.self) { try await response.value }
        #expect(!channel.isActive)
    }

    @Test("a malformed response fails the request and closes the connection")
    func malformedResponse() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let response = Task { try await remote.post() }
        _ = try await Self.request(on: channel)
        try await Self.answer(channel, "this is not HTTP\r\n\r\n")
        await #expect(throws: HTTPParserError.self) { try await response.value }
        #expect(!channel.isActive)
    }

    @Test("the timeout bounds the whole exchange; a head already in gives the failure its status")
    func timeout() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let response = Task { try await remote.post(timeout: .seconds(10)) }
        _ = try await Self.request(on: channel)
        try await Self.answer(channel, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 100\r\n\r\nno tok")
        await remote.loop.advanceTime(by: .seconds(9))
        #expect(channel.isActive, "not yet")
        await remote.loop.advanceTime(by: .seconds(1))
        await #expect(throws: UploadClientError.timedOut(status: 401)) { try await response.value }
        #expect(!channel.isActive)
    }

    @Test("cancelling the caller ends its request and closes the connection, whose answer may still come")
    func cancelled() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let task = Task { try await remote.post() }
        _ = try await Self.request(on: channel)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        await remote.loop.run()
        #expect(!channel.isActive)
    }

    @Test("an idle connection closes on the idle event; one with a request under way stays open")
    func idle() async throws {
        let remote = try Remote()
        let channel = try await remote.prepareConnection()
        let idle = IdleStateHandler.IdleStateEvent.read
        let response = Task { try await remote.post() }
        _ = try await Self.request(on: channel)
        try await remote.loop.executeInContext { channel.pipeline.fireUserInboundEventTriggered(idle) }
        #expect(channel.isActive, "a request is under way")
        try await Self.answer(channel, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        _ = try await response.value
        try await remote.loop.executeInContext { channel.pipeline.fireUserInboundEventTriggered(idle) }
        #expect(!channel.isActive)
    }

    @Test("a kept connection the remote closes while idle leaves the pool; the next request opens another")
    func closedWhileIdle() async throws {
        let remote = try Remote()
        let kept = try await remote.prepareConnection()
        let first = Task { try await remote.post() }
        _ = try await Self.request(on: kept)
        try await Self.answer(kept, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        _ = try await first.value
        try await kept.close()

        let fresh = try await remote.prepareConnection()
        let second = Task { try await remote.post() }
        _ = try await Self.request(on: fresh)
        try await Self.answer(fresh, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try await second.value.status == 200)
        #expect(remote.connections == 2)
    }
}
