import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

import LogShipRecord
import LogShipTestKit
@testable import LogShip

/// The keep-alive POST client under the uploader, against the real receiver on loopback.
@Suite("Upload client")
struct UploadClientTests {
    func client(_ receiver: TestReceiver) throws -> UploadClient {
        try UploadClient(
            endpoint: #require(UploadEndpoint(url: receiver.url)), tls: nil,
            eventLoop: MultiThreadedEventLoopGroup.singleton.next())
    }

    /// One record with `message`, as the daemon encodes it.
    static func line(_ message: String) -> [UInt8] {
        LogRecord(
            timestamp: Timestamp(rfc3339: "2026-11-22T10:00:00Z")!, priority: .info, severity: .informational,
            host: "web-1", source: .socket, message: message
        ).ndjsonLine
    }

    /// POSTs one record, as the daemon encodes it, with `message`.
    func post(_ client: UploadClient, _ message: String) async throws -> UploadResponse {
        let headers = HTTPHeaders([("Content-Type", "application/x-ndjson")])
        var body = ByteBuffer(bytes: Self.line(message))
        body.writeString("\n")
        return try await client.post(headers: headers, body: body, timeout: .seconds(120), excerptLimit: 64)
    }

    @Test("requests share a kept-alive connection; the answer's status and the start of its body come back")
    func keepAlive() async throws {
        let receiver = try await TestReceiver()
        let client = try client(receiver)
        for index in 0..<3 {
            let response = try await post(client, "m\(index)")
            #expect(
                response.status == 200 && String(decoding: response.excerpt, as: UTF8.self).hasPrefix("logctl receive"))
        }
        #expect(receiver.records.map(\.message) == ["m0", "m1", "m2"])
        #expect(receiver.receiver.statistics.connections == 1, "one connection for three requests")
        client.shutdown()
    }

    @Test("""
        a retired client still serves the requests that reach it, each on a connection of its own; a shut-down one \
        refuses
        """)
    func retired() async throws {
        let receiver = try await TestReceiver()
        let client = try client(receiver)
        _ = try await post(client, "before")
        client.retire()
        #expect(try await post(client, "after one").status == 200)
        #expect(try await post(client, "after two").status == 200)
        #expect(receiver.receiver.statistics.connections == 3, "no connection is kept once retired")
        client.shutdown()
        await #expect(throws: UploadClientError.shutDown) { _ = try await post(client, "refused") }
        #expect(receiver.records.map(\.message) == ["before", "after one", "after two"])
    }

    @Test("""
        upload.headers reach the remote and win over the format's Content-Type; Host and Content-Length stay the \
        client's
        """)
    func configuredHeaders() async throws {
        let receiver = try await TestReceiver()
        // A timeout a loaded machine cannot reach: with the default 10 s, a CI run beside two CPU hogs and the
        // fuzzing suite timed out waiting for the loopback receiver's answer.
        let uploader = try HTTPUploader(
            configuration: .init(
                url: receiver.url,
                headers: [
                    ("X-Env", "staging"), ("Content-Type", "application/json"), ("Host", "elsewhere"),
                    ("Content-Length", "1"),
                ],
                timeout: .seconds(120)),
            eventLoops: [MultiThreadedEventLoopGroup.singleton.next()])
        defer { uploader.shutdown() }
        _ = try await uploader.upload(Payload(lines: [Array(#"{"message":"m"}"#.utf8)[...]], batchNumber: 7))
        let headers = try #require(receiver.requests.first).headers
        #expect(headers["X-Env"] == ["staging"])
        #expect(headers["Content-Type"] == ["application/json"])
        #expect(headers["Host"] == ["127.0.0.1:\(try #require(receiver.receiver.address.port))"])
        let identified = #"{"id":"\#(RecordIDs.numbered(1)[0])","message":"m"}"#
        #expect(headers["Content-Length"] == ["\(identified.utf8.count + 1)"])
        #expect(headers["X-Logshipd-Records"] == ["1"] && headers["X-Logshipd-Batch"] == ["7"])
        #expect(headers["Idempotency-Key"] == [RecordIDs.numbered(1).idempotencyKey])
    }
}
