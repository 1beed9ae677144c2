import AsyncHTTPClient
import Foundation
import LogShipTestKit
import NIOCore
import Testing

@testable import LogShip
@testable import LogShipClient
@testable import LogShipRecord

/// `upload.format` and `upload.compression`: the exact bodies, a round trip through the receiver for every format,
/// and the real consumers: systemd-journal-remote and OpenTelemetry's own protobuf definitions.
@Suite("Upload formats")
struct UploadFormatTests {
    static let records = [
        LogRecord(
            timestamp: Timestamp(rfc3339: "2026-11-21T10:00:00.000002Z")!, priority: .crash, severity: .critical,
            host: "web-1", source: .control, message: "segfault at 0 ip \"x\"\nsecond line",
            peer: PeerCredentials(pid: 42, uid: 1000, gid: 1000, comm: "api"),
            fields: ["syslog_identifier": "api", "request_id": "r-7"]),
        LogRecord(
            timestamp: Timestamp(rfc3339: "2026-11-21T10:00:00.000001Z")!, priority: .info, severity: .informational,
            host: "web-1", source: .socket, message: "GET /health 200"),
    ]
    static var lines: [ArraySlice<UInt8>] { records.map { $0.ndjsonLine[...] } }

    @Test("ndjson, json and loki bodies are exactly the expected bytes, each record with its id")
    func goldenBodies() throws {
        let first = #"{"timestamp":"2026-11-21T10:00:00.000002Z","priority":"crash","severity":2,"host":"web-1","#
            + #""source":"control","message":"segfault at 0 ip \"x\"\nsecond line","pid":42,"uid":1000,"gid":1000,"#
            + #""comm":"api","fields":{"request_id":"r-7","syslog_identifier":"api"}}"#
        let second = #"{"timestamp":"2026-11-21T10:00:00.000001Z","priority":"info","severity":6,"host":"web-1","#
            + #""source":"socket","message":"GET /health 200"}"#
        let ids = RecordIDs.numbered(2)
        let identified = { (index: Int, line: String) in #"{"id":"\#(ids[index])","# + line.dropFirst() }
        #expect(String(decoding: try UploadFormat.ndjson.encoder.encode(Self.lines), as: UTF8.self)
            == "\(identified(0, first))\n\(identified(1, second))\n")
        #expect(String(decoding: try UploadFormat.json.encoder.encode(Self.lines), as: UTF8.self)
            == "[\(identified(0, first)),\(identified(1, second))]")
        let loki = String(decoding: try UploadFormat.loki.encoder.encode(Self.lines), as: UTF8.self)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let quoted = { (line: String) in String(decoding: try! encoder.encode(line), as: UTF8.self) }
        #expect(loki == """
            {"streams":[{"stream":{"host":"web-1","priority":"crash"},\
            "values":[["1795255200000002000",\(quoted(first)),\
            {"log_record_uid":"\(ids[0])"}]]},\
            {"stream":{"host":"web-1","priority":"info"},"values":[["1795255200000001000",\(quoted(second)),\
            {"log_record_uid":"\(ids[1])"}]]}]}
            """)
    }

    @Test("a sender's time outside years 0000-9999 is clamped, so every format can read the spooled line back")
    func extremeTimestamps() throws {
        let parser = RecordParser(hostname: "h")
        for line in [
            #"{"timestamp":"0000-01-01T00:00:00+01:00","message":"x"}"#, #"{"timestamp":-99999999999,"message":"y"}"#,
        ] {
            let record = parser.parse(
                Frame(bytes: Array(line.utf8), truncated: false), source: .socket, peer: nil, receivedAt: .now())
            #expect(record.timestamp.rfc3339 == "0000-01-01T00:00:00.000000Z", "\(line)")
            for format in UploadFormat.allCases {
                #expect(throws: Never.self, "\(format)") { try format.encoder.encode([record.ndjsonLine[...]]) }
            }
        }
        #expect(Timestamp(microsecondsSinceEpoch: .max).rfc3339 == "9999-12-31T23:59:59.999999Z")
    }

    @Test("the journal export body is the format's fields, with a multi-line message in the binary-safe form")
    func journalExportBody() throws {
        let body = try UploadFormat.journal.encoder.encode([Self.lines[0]])
        let message = Array("segfault at 0 ip \"x\"\nsecond line".utf8)
        var expected = Array("__REALTIME_TIMESTAMP=1795255200000002\nMESSAGE\n".utf8)
        withUnsafeBytes(of: UInt64(message.count).littleEndian) { expected += $0 }
        expected += message + Array("""

            PRIORITY=2
            _HOSTNAME=web-1
            LOGSHIP_PRIORITY_CLASS=crash
            LOGSHIP_SOURCE=control
            LOGSHIP_RECORD_ID=\(RecordIDs.numbered(1)[0])
            _PID=42
            _UID=1000
            _GID=1000
            _COMM=api
            REQUEST_ID=r-7
            SYSLOG_IDENTIFIER=api


            """.utf8)
        #expect(body == expected)
    }

    @Test(
        "every format reaches the receiver whole, at its default path, gzip- or zstd-compressed when asked",
        arguments: UploadFormat.allCases, [UploadCompression.none, .gzip(level: 6), .zstd(level: 3)])
    func roundTrip(format: UploadFormat, compression: UploadCompression) async throws {
        let receiver = try await TestReceiver()
        let port = try #require(receiver.receiver.address.port)
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.url = "http://127.0.0.1:\(port)"
            $0.upload.format = format
            $0.upload.compression = compression
            $0.hostname = "round-trip-host"
        }
        let submissions = [
            Submission(message: "core dumped\nat frame 0", priority: "crash", fields: ["request_id": "r-1"]),
            Submission(message: "disk 91% full", priority: "warning"),
            Submission(message: "cache miss", priority: "debug"),
        ]
        #expect(try await daemon.send(submissions).ok)
        try await receiver.waitFor(records: 3)
        try await daemon.stop()

        let requests = receiver.requests
        #expect(requests.allSatisfy { $0.path == format.encoder.defaultPath })
        #expect(requests.allSatisfy { $0.format == format.rawValue })
        #expect(requests.allSatisfy { $0.contentEncoding == compression.contentEncoding })
        #expect(requests.allSatisfy { $0.malformedLines == 0 })
        let received = receiver.records.sorted { $0.message < $1.message }
        #expect(received.map(\.message) == ["cache miss", "core dumped\nat frame 0", "disk 91% full"])
        #expect(received.map(\.priority) == [.debug, .crash, .warning])
        #expect(received.allSatisfy { $0.host == "round-trip-host" })
        #expect(received[1].fields["request_id"] == "r-1")
        // The sender as the kernel named it, which `logctl receive` shows as comm[pid] uid=…
        #expect(received.allSatisfy { $0.peer?.pid == getpid() && $0.peer?.uid == getuid() }, "\(received.map(\.peer))")
    }

    @Test(
        """
        gzip and zstd, at their fastest and smallest, shrink a batch of typical log lines to under a quarter, and the \
        receiver reads it back
        """,
        arguments: [UploadCompression.gzip(level: 1), .gzip(level: 9), .zstd(level: 1), .zstd(level: 19)])
    func compressionShrinks(compression: UploadCompression) async throws {
        let receiver = try await TestReceiver()
        let daemon = try await TestDaemon.start(receiver: receiver) { $0.upload.compression = compression }
        let lines = (0..<500).map { "GET /api/v1/orders/\($0) 200 12ms user=alice@example.com agent=curl/8.5.0" }
        try await daemon.send(count: 500, priority: "info", prefix: lines[0])
        try await receiver.waitFor(records: 500)
        try await daemon.stop()
        let sent = receiver.requests.reduce(0) { $0 + $1.bodyBytes }
        let plain = receiver.records.reduce(0) { $0 + $1.ndjsonLine.count + 1 }
        #expect(receiver.requests.allSatisfy { $0.contentEncoding == compression.contentEncoding })
        #expect(sent * 4 < plain, "\(compression) sent \(sent) bytes for \(plain)")
    }

    @Test("the receiver answers 400 to a body that claims gzip or zstd and is not, or to an encoding it does not know")
    func undecodableBodiesAreRefused() async throws {
        let receiver = try await TestReceiver()
        for (encoding, body) in [("gzip", "not gzip at all"), ("zstd", "not zstd either"), ("br", "{}")] {
            var request = HTTPClientRequest(url: receiver.url)
            request.method = .POST
            request.headers.add(name: "Content-Encoding", value: encoding)
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(response.status == .badRequest, "\(encoding)")
        }
        #expect(receiver.requests.map(\.malformedLines) == [1, 1, 1])
    }

    /// Starts systemd-journal-remote on a free loopback port. It binds the port itself, so the reservation is let
    /// go just before; should another socket of this busy process take the port in that moment, it tries another.
    static func startJournalRemote(writingTo output: String) async throws -> (ChildProcess, Int) {
        var attempts = 1
        while true {
            let reserved = try PortReservation()
            let port = reserved.port
            reserved.release()
            let remote = try await ChildProcess.start(
                "/lib/systemd/systemd-journal-remote",
                ["--listen-http=127.0.0.1:\(port)", "--output=\(output)", "--split-mode=none"])
            try await waitUntil { acceptsConnections(port: port) || !remote.isRunning }
            if remote.isRunning || attempts == 3 || !remote.standardErrorSoFar.contains("in use") {
                return (remote, port)
            }
            attempts += 1
        }
    }

    @Test("journal format: systemd-journal-remote stores every record, read back with journalctl")
    func journalRemote() async throws {
        let directory = try TemporaryDirectory.make()
        let (remote, port) = try await Self.startJournalRemote(writingTo: "\(directory)/remote.journal")
        defer { remote.signal(SIGTERM) }
        #expect(remote.isRunning, "systemd-journal-remote: \(remote.standardErrorSoFar)")

        let receiver = try await TestReceiver()
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.url = "http://127.0.0.1:\(port)"
            $0.upload.format = .journal
            $0.hostname = "journal-test-host"
        }
        let submissions = (0..<20).map {
            Submission(message: "entry \($0)", priority: $0 == 7 ? "crash" : "info", fields: ["request_id": "r-\($0)"])
        } + [Submission(message: "two\nlines", priority: "error")]
        #expect(try await daemon.send(submissions).ok)

        try await eventually { try await Self.journalEntries(in: directory).count >= submissions.count }
        try await daemon.stop()
        let entries = try await Self.journalEntries(in: directory)
        #expect(entries.count == submissions.count)
        let byMessage = Dictionary(entries.map { ($0["MESSAGE"] ?? "", $0) }) { first, _ in first }
        #expect(byMessage["entry 7"]?["PRIORITY"] == "2")
        #expect(byMessage["entry 7"]?["LOGSHIP_PRIORITY_CLASS"] == "crash")
        #expect(byMessage["entry 3"]?["REQUEST_ID"] == "r-3")
        #expect(byMessage["two\nlines"]?["PRIORITY"] == "3")
        #expect(Set(entries.compactMap { $0["_HOSTNAME"] }) == ["journal-test-host"])
    }

    @Test(
        """
        otlp and otlp-json: the body a daemon sends parses strictly with opentelemetry-proto's ExportLogsServiceRequest
        """,
        arguments: [UploadFormat.otlp, .otlpJSON])
    func otlpParsesWithOpenTelemetryProto(format: UploadFormat) async throws {
        let python = PythonTools.python
        try #require(
            FileManager.default.isExecutableFile(atPath: python), "run scripts/install-deps.sh (it makes \(python))")
        var behavior = LogReceiver.Behavior()
        behavior.keepsBodies = true
        let receiver = try await TestReceiver(behavior: behavior)
        let port = try #require(receiver.receiver.address.port)
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.url = "http://127.0.0.1:\(port)"
            $0.upload.format = format
        }
        #expect(try await daemon.send([
            Submission(message: "panic: nil map", priority: "crash", fields: ["syslog_identifier": "api"]),
            Submission(message: "listening", priority: "info"),
        ]).ok)
        try await receiver.waitFor(records: 2)
        try await daemon.stop()

        let check = """
            import json, sys
            from google.protobuf import json_format
            from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
            request = ExportLogsServiceRequest()
            if sys.argv[1] == "otlp":
                request.ParseFromString(sys.stdin.buffer.read())
            else:
                json_format.Parse(sys.stdin.read(), request, ignore_unknown_fields=False)
            for rl in request.resource_logs:
                resource = sorted(a.key for a in rl.resource.attributes)
                for r in (r for sl in rl.scope_logs for r in sl.log_records):
                    keys = {a.key for a in r.attributes}
                    print(r.body.string_value, r.severity_number, r.severity_text, r.time_unix_nano > 0,
                          "syslog_identifier" in keys, resource)
            """
        var printed: [String] = []
        for request in receiver.requests {
            let result = try await run(python, ["-c", check, format.rawValue], stdin: Data(try #require(request.body)))
            #expect(result.status == 0, "\(result.standardError)")
            printed += result.standardOutput.split(separator: "\n").map(String.init)
        }
        #expect(printed.sorted() == [
            "listening 9 INFO True False ['host.name', 'service.name']",
            "panic: nil map 21 FATAL True True ['host.name', 'service.name']",
        ])
    }

    /// The entries of the journal files in `directory`, as `journalctl -o json` prints them (a multi-line
    /// message is an array of bytes there, turned back into text here).
    static func journalEntries(in directory: String) async throws -> [[String: String]] {
        let result = try await run("/usr/bin/journalctl", ["--directory", directory, "-o", "json", "--no-pager"])
        guard result.status == 0 else { throw CommandFailed("journalctl", result) }
        return try result.standardOutput.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return object.compactMapValues { value in
                if let text = value as? String { return text }
                if let bytes = value as? [Int] { return String(decoding: bytes.map { UInt8($0) }, as: UTF8.self) }
                return nil
            }
        }
    }
}

/// The Python that scripts/install-deps.sh sets up with opentelemetry-proto, for checking OTLP bodies.
enum PythonTools {
    static var python: String {
        packageRoot.appendingPathComponent(".build-python/bin/python3").path
    }
}

@Suite("zstd request bodies")
struct ZstdBodyTests {
    @Test("""
        a body of several frames decompresses whole; one that decompresses past the limit or ends inside a frame is \
        refused
        """)
    func frames() throws {
        let text = ByteBuffer(string: String(repeating: "GET /health 200\n", count: 20_000))
        var twoFrames = try UploadCompression.zstd(level: 3).compress(text)
        twoFrames.writeImmutableBuffer(try UploadCompression.zstd(level: 1).compress(text))
        let decoder = RequestBodyDecoder(maximumBytes: 1 << 20)
        #expect(try decoder.decompressed(twoFrames, contentEncoding: "zstd").readableBytes == 2 * text.readableBytes)

        #expect(throws: RequestBodyDecoder.Failure.self) {
            try RequestBodyDecoder(maximumBytes: 500_000).decompressed(twoFrames, contentEncoding: "zstd")
        }
        let cut = twoFrames.getSlice(at: 0, length: twoFrames.readableBytes - 3)!
        #expect(throws: RequestBodyDecoder.Failure.self) { try decoder.decompressed(cut, contentEncoding: "zstd") }
    }
}
