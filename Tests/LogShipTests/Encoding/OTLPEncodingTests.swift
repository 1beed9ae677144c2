import Foundation
import LogShipTestKit
import NIOCore
import OTLPProto
import SwiftProtobuf
import Testing

@testable import LogShip
@testable import LogShipClient
@testable import LogShipRecord

/// Issue 31, point 2: `otlp` is OTLP/HTTP in protobuf, `otlp-json` in JSON; both parse with OpenTelemetry's own
/// definitions to the same message, every field as logshipd means it.
@Suite("OTLP in protobuf and JSON")
struct OTLPEncodingTests {
    static let records = UploadFormatTests.records + [
        LogRecord(
            timestamp: Timestamp(rfc3339: "1969-12-31T23:59:59Z")!, priority: .error, severity: .error,
            host: "db \"1\"", source: .journal, message: "tab\there",
            peer: PeerCredentials(pid: -1, uid: 0, gid: 0, comm: nil),
            fields: ["systemd_unit": "db.service", "process.pid": "7"], truncated: true),
    ]

    /// The request as opentelemetry-proto's `MessageToDict` gives it: field names as in the .proto, 64-bit
    /// integers as strings, enums by name, fields at their default left out (the record before 1970 has no time);
    /// each record's id (``RecordIDs/numbered(_:priority:)``) is its `log.record.uid`.
    static let expected = """
        {"resource_logs": [
          {"resource": {"attributes": [{"key": "host.name", "value": {"string_value": "web-1"}},
                                       {"key": "service.name", "value": {"string_value": "api"}}]},
           "scope_logs": [{"scope": {"name": "logshipd", "version": "\(LogShipVersion.current)"}, "log_records": [
             {"time_unix_nano": "1795255200000002000", "observed_time_unix_nano": "1795255200000002000",
              "severity_number": "SEVERITY_NUMBER_FATAL", "severity_text": "FATAL",
              "body": {"string_value": "segfault at 0 ip \\"x\\"\\nsecond line"},
              "attributes": [
                {"key": "log.record.uid", "value": {"string_value": "0123456789abcdeffedcba9876543210-info-1"}},
                {"key": "logship.source", "value": {"string_value": "control"}},
                {"key": "logship.priority", "value": {"string_value": "crash"}},
                {"key": "syslog.severity", "value": {"int_value": "2"}},
                {"key": "process.pid", "value": {"int_value": "42"}},
                {"key": "user.id", "value": {"int_value": "1000"}},
                {"key": "group.id", "value": {"int_value": "1000"}},
                {"key": "process.executable.name", "value": {"string_value": "api"}},
                {"key": "request_id", "value": {"string_value": "r-7"}},
                {"key": "syslog_identifier", "value": {"string_value": "api"}}]}]}]},
          {"resource": {"attributes": [{"key": "host.name", "value": {"string_value": "web-1"}},
                                       {"key": "service.name", "value": {"string_value": "unknown"}}]},
           "scope_logs": [{"scope": {"name": "logshipd", "version": "\(LogShipVersion.current)"}, "log_records": [
             {"time_unix_nano": "1795255200000001000", "observed_time_unix_nano": "1795255200000001000",
              "severity_number": "SEVERITY_NUMBER_INFO", "severity_text": "INFO",
              "body": {"string_value": "GET /health 200"},
              "attributes": [
                {"key": "log.record.uid", "value": {"string_value": "0123456789abcdeffedcba9876543210-info-2"}},
                {"key": "logship.source", "value": {"string_value": "socket"}},
                {"key": "logship.priority", "value": {"string_value": "info"}},
                {"key": "syslog.severity", "value": {"int_value": "6"}}]}]}]},
          {"resource": {"attributes": [{"key": "host.name", "value": {"string_value": "db \\"1\\""}},
                                       {"key": "service.name", "value": {"string_value": "db.service"}}]},
           "scope_logs": [{"scope": {"name": "logshipd", "version": "\(LogShipVersion.current)"}, "log_records": [
             {"severity_number": "SEVERITY_NUMBER_ERROR", "severity_text": "ERROR",
              "body": {"string_value": "tab\\there"},
              "attributes": [
                {"key": "log.record.uid", "value": {"string_value": "0123456789abcdeffedcba9876543210-info-3"}},
                {"key": "logship.source", "value": {"string_value": "journal"}},
                {"key": "logship.priority", "value": {"string_value": "error"}},
                {"key": "syslog.severity", "value": {"int_value": "3"}},
                {"key": "process.pid", "value": {"int_value": "-1"}},
                {"key": "user.id", "value": {"int_value": "0"}},
                {"key": "group.id", "value": {"int_value": "0"}},
                {"key": "systemd.unit", "value": {"string_value": "db.service"}},
                {"key": "logship.truncated", "value": {"bool_value": true}},
                {"key": "logship.field.process.pid", "value": {"string_value": "7"}}]}]}]}
        ]}
        """

    @Test(
        "every field of both encodings, parsed strictly by opentelemetry-proto",
        arguments: [UploadFormat.otlp, .otlpJSON])
    func everyField(format: UploadFormat) async throws {
        let python = PythonTools.python
        try #require(
            FileManager.default.isExecutableFile(atPath: python), "run scripts/install-deps.sh (it makes \(python))")
        let body = try format.encoder.encode(Self.records.map { $0.ndjsonLine[...] })
        let check = """
            import json, sys
            from google.protobuf import json_format
            from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
            request = ExportLogsServiceRequest()
            if sys.argv[1] == "otlp":
                request.ParseFromString(sys.stdin.buffer.read())
            else:
                json_format.Parse(sys.stdin.read(), request, ignore_unknown_fields=False)
            print(json.dumps(json_format.MessageToDict(request, preserving_proto_field_name=True)))
            """
        let result = try await run(python, ["-c", check, format.rawValue], stdin: Data(body))
        #expect(result.status == 0, "\(result.standardError)")
        let parsed = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? NSObject
        let expected = try JSONSerialization.jsonObject(with: Data(Self.expected.utf8)) as? NSObject
        #expect(parsed != nil && parsed == expected, "\(result.standardOutput)")
    }

    @Test("otlp is application/x-protobuf, otlp-json application/json, both to /v1/logs")
    func contentTypes() {
        #expect(UploadFormat.otlp.encoder.contentType == "application/x-protobuf")
        #expect(UploadFormat.otlpJSON.encoder.contentType == "application/json")
        #expect(
            UploadFormat.otlp.encoder.defaultPath == "/v1/logs"
                && UploadFormat.otlpJSON.encoder.defaultPath == "/v1/logs")
    }

    @Test("the receiver reads a protobuf body back to the records, and counts a damaged one as malformed")
    func receiverReadsProtobuf() throws {
        let body = try UploadFormat.otlp.encoder.encode(Self.records.map { $0.ndjsonLine[...] })
        let decoder = RequestBodyDecoder(maximumBytes: 1 << 20)
        let format = RequestBodyDecoder.Format(
            path: "/v1/logs", contentType: "application/x-protobuf", body: ByteBuffer(bytes: body))
        #expect(format == .otlp)
        let decoded = decoder.decode(ByteBuffer(bytes: body), as: format)
        // The record before 1970 comes back at 1970: OTLP's times are unsigned.
        var expected = Self.records
        expected[2].timestamp = Timestamp(microsecondsSinceEpoch: 0)
        #expect(decoded.records.sorted { $0.message < $1.message } == expected.sorted { $0.message < $1.message })
        #expect(decoder.decode(ByteBuffer(bytes: body.dropLast(3)), as: .otlp).malformed == 1)
    }

    @Test("a batch that outgrows a one-byte length keeps every length right: 300 records of 70 000 bytes and less")
    func longLengths() async throws {
        // On a thread of its own, not the cooperative pool every test shares: 10 MB of strings, which this debug
        // build's protobuf decodes a character at a time, took a pool thread for minutes in loaded full runs.
        let lengths = try await offloaded {
            let lines = (0..<300).map { index in
                LogRecord(
                    timestamp: Timestamp(microsecondsSinceEpoch: Int64(index)), priority: .info,
                    severity: .informational, host: "h", source: .socket,
                    message: String(repeating: "m", count: index * 233)
                ).ndjsonLine[...]
            }
            let message = try Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest(
                serializedBytes: try UploadFormat.otlp.encoder.encode(lines))
            return message.resourceLogs.flatMap(\.scopeLogs).flatMap(\.logRecords).map(\.body.stringValue.count)
        }
        #expect(lengths == (0..<300).map { $0 * 233 })
    }
}
