import AsyncHTTPClient
import Foundation
import LogShipTestKit
import NIOCore
import Testing

@testable import LogShip
@testable import LogShipClient
@testable import LogShipRecord

/// Issue 28, point 6: in every format what the host vouches for (pid, uid, gid, comm, host, source, class,
/// severity, and the unit of a journal record) wins over a sender's fields, which are kept under a prefix when
/// their names collide. Checked in the body as the real consumers read it, and in the records `logctl receive`
/// decodes from it.
@Suite("Upload formats: a sender's fields never pose as the host's identity")
struct UploadFormatIdentityTests {
    /// Fields a sender of uid 1000, pid 4242 sets to pass as sshd, pid 1, uid 0, in one format or another.
    static let spoofedFields: RecordFields = [
        "process.pid": "1", "user.id": "0", "group.id": "0", "process.executable.name": "sshd",
        "host.name": "bastion", "service.name": "sshd", "systemd.unit": "sshd.service", "systemd_unit": "sshd.service",
        "syslog.severity": "0", "logship.priority": "crash", "logship.source": "journal",
        "_pid": "1", "uid": "0", "gid": "0", "_comm": "sshd", "priority": "0", "message": "root logged in",
        "hostname": "bastion", "__realtime_timestamp": "0", "logship_priority_class": "crash",
        "syslog_identifier": "sshd", "request_id": "r-7",
    ]

    static let record = LogRecord(
        timestamp: Timestamp(rfc3339: "2026-11-21T10:00:00.000001Z")!, priority: .info, severity: .informational,
        host: "web-1", source: .socket, message: "Accepted password for root",
        peer: PeerCredentials(pid: 4242, uid: 1000, gid: 1000, comm: "worker"), fields: spoofedFields)

    /// A record journald vouches for: its unit is `_SYSTEMD_UNIT`, not a sender's word.
    static let journalRecord = LogRecord(
        timestamp: Timestamp(rfc3339: "2026-11-21T10:00:00.000002Z")!, priority: .error, severity: .error,
        host: "web-1", source: .journal, message: "out of disk",
        peer: PeerCredentials(pid: 812, uid: 0, gid: 0, comm: "nginx"),
        fields: ["systemd_unit": "nginx.service", "syslog_identifier": "nginx"])

    static func decoded(_ body: [UInt8], as format: RequestBodyDecoder.Format) -> RequestBodyDecoder.Decoded {
        RequestBodyDecoder(maximumBytes: 1 << 20).decode(ByteBuffer(bytes: body), as: format)
    }

    @Test(
        """
        otlp and otlp-json: resource and attributes are the host's; process.pid, user.id, service.name … as \
        logship.field.*
        """,
        arguments: [UploadFormat.otlp, .otlpJSON])
    func otlp(format: UploadFormat) async throws {
        let python = PythonTools.python
        try #require(
            FileManager.default.isExecutableFile(atPath: python), "run scripts/install-deps.sh (it makes \(python))")
        let body = try format.encoder.encode([Self.record.ndjsonLine[...]])

        // Every attribute as a [key, value] pair, so that a key given twice shows.
        let check = """
            import json, sys
            from google.protobuf import json_format
            from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
            request = ExportLogsServiceRequest()
            if sys.argv[1] == "otlp":
                request.ParseFromString(sys.stdin.buffer.read())
            else:
                json_format.Parse(sys.stdin.read(), request, ignore_unknown_fields=False)
            def pairs(attributes):
                return [[a.key, str(getattr(a.value, a.value.WhichOneof("value")))] for a in attributes]
            for rl in request.resource_logs:
                for r in (r for sl in rl.scope_logs for r in sl.log_records):
                    print(json.dumps({"resource": pairs(rl.resource.attributes), "attributes": pairs(r.attributes),
                                      "severity": r.severity_number}))
            """
        let result = try await run(python, ["-c", check, format.rawValue], stdin: Data(body))
        #expect(result.status == 0, "\(result.standardError)")
        struct Parsed: Decodable {
            var resource: [[String]]
            var attributes: [[String]]
            var severity: Int
        }
        let parsed = try result.standardOutput.split(separator: "\n").map {
            try JSONDecoder().decode(Parsed.self, from: Data($0.utf8))
        }
        try #require(parsed.count == 1)
        let resourceKeys = parsed[0].resource.map { $0[0] }
        let keys = parsed[0].attributes.map { $0[0] }
        #expect(Set(resourceKeys).count == resourceKeys.count && Set(keys).count == keys.count, "a key given twice")
        let resource = Dictionary(parsed[0].resource.map { ($0[0], $0[1]) }) { first, _ in first }
        let attributes = Dictionary(parsed[0].attributes.map { ($0[0], $0[1]) }) { first, _ in first }
        #expect(resource == ["host.name": "web-1", "service.name": "worker"])
        #expect(parsed[0].severity == 9)
        #expect(attributes == [
            "log.record.uid": RecordIDs.numbered(1)[0],
            "logship.source": "socket", "logship.priority": "info", "syslog.severity": "6",
            "process.pid": "4242", "user.id": "1000", "group.id": "1000", "process.executable.name": "worker",
            "logship.field.process.pid": "1", "logship.field.user.id": "0", "logship.field.group.id": "0",
            "logship.field.process.executable.name": "sshd", "logship.field.host.name": "bastion",
            "logship.field.service.name": "sshd", "logship.field.systemd.unit": "sshd.service",
            "logship.field.syslog.severity": "0", "logship.field.logship.priority": "crash",
            "logship.field.logship.source": "journal",
            // Not a name logshipd sets: a socket sender's systemd_unit is one of its fields, not the unit.
            "systemd_unit": "sshd.service",
            "_pid": "1", "uid": "0", "gid": "0", "_comm": "sshd", "priority": "0", "message": "root logged in",
            "hostname": "bastion", "__realtime_timestamp": "0", "logship_priority_class": "crash",
            "syslog_identifier": "sshd", "request_id": "r-7",
        ])

        // The receiver reads the same record back: the kernel's identity, the sender's fields under their names.
        let decoded = Self.decoded(body, as: format == .otlp ? .otlp : .otlpJSON)
        #expect(decoded.records == [Self.record])
    }

    @Test("journal: journal-remote stores the host's _PID, _UID, PRIORITY; a sender's pid, priority … as FIELD_*")
    func journalExport() async throws {
        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (remote, port) = try await UploadFormatTests.startJournalRemote(writingTo: "\(directory)/remote.journal")
        defer { remote.signal(SIGTERM) }
        try #require(remote.isRunning, "systemd-journal-remote: \(remote.standardErrorSoFar)")

        // `systemd.unit` and `systemd_unit` are both SYSTEMD_UNIT in the journal's names: one is enough here.
        var record = Self.record
        record.fields["systemd.unit"] = nil
        let body = try UploadFormat.journal.encoder.encode([record.ndjsonLine[...], Self.journalRecord.ndjsonLine[...]])
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/upload")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/vnd.fdo.journal")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect((200..<300).contains(Int(response.status.code)), "\(response.status)")

        try await eventually { try await UploadFormatTests.journalEntries(in: directory).count >= 2 }
        let entries = try await UploadFormatTests.journalEntries(in: directory)
        // A field written twice is an array in `journalctl -o json`, which `journalEntries` leaves out.
        let spoofed = try #require(entries.first { $0["_PID"] == "4242" })
        let vouched = try #require(entries.first { $0["_PID"] == "812" })
        let addedByRemote: Set = ["_BOOT_ID", "_MACHINE_ID", "_SOURCE_REALTIME_TIMESTAMP"]
        let own = spoofed.filter { !$0.key.hasPrefix("__") && !addedByRemote.contains($0.key) }
        #expect(own == [
            "MESSAGE": "Accepted password for root", "PRIORITY": "6", "_HOSTNAME": "web-1",
            "_PID": "4242", "_UID": "1000", "_GID": "1000", "_COMM": "worker",
            "LOGSHIP_PRIORITY_CLASS": "info", "LOGSHIP_SOURCE": "socket", "LOGSHIP_RECORD_ID": RecordIDs.numbered(2)[0],
            "FIELD_PID": "1", "FIELD_UID": "0", "FIELD_GID": "0", "FIELD_COMM": "sshd", "FIELD_PRIORITY": "0",
            "FIELD_MESSAGE": "root logged in", "FIELD_HOSTNAME": "bastion", "FIELD_REALTIME_TIMESTAMP": "0",
            "FIELD_SYSTEMD_UNIT": "sshd.service", "FIELD_LOGSHIP_PRIORITY_CLASS": "crash",
            "FIELD_LOGSHIP_PRIORITY": "crash", "FIELD_LOGSHIP_SOURCE": "journal",
            "PROCESS_PID": "1", "USER_ID": "0", "GROUP_ID": "0", "PROCESS_EXECUTABLE_NAME": "sshd",
            "HOST_NAME": "bastion", "SERVICE_NAME": "sshd",
            "SYSLOG_SEVERITY": "0", "SYSLOG_IDENTIFIER": "sshd", "REQUEST_ID": "r-7",
        ])
        #expect(spoofed["__REALTIME_TIMESTAMP"] == "1795255200000001")
        // journald's unit, not a sender's: `journalctl -u nginx.service` finds it on the remote.
        #expect(vouched["_SYSTEMD_UNIT"] == "nginx.service")
        #expect(vouched["SYSTEMD_UNIT"] == nil && vouched["FIELD_SYSTEMD_UNIT"] == nil)

        // The receiver reads the identity from the kernel's names and shows the renamed fields as fields.
        let decoded = Self.decoded(body, as: .journal).records
        try #require(decoded.count == 2)
        #expect(decoded[0].peer == Self.record.peer)
        #expect(decoded[0].source == .socket && decoded[0].priority == .info && decoded[0].severity == .informational)
        #expect(decoded[0].host == "web-1" && decoded[0].message == "Accepted password for root")
        #expect(decoded[0].fields["pid"] == "1" && decoded[0].fields["priority"] == "0")
        #expect(decoded[0].fields["systemd_unit"] == "sshd.service" && decoded[0].fields["request_id"] == "r-7")
        #expect(decoded[1].peer == Self.journalRecord.peer && decoded[1].source == .journal)
        #expect(decoded[1].fields == Self.journalRecord.fields)
    }

    @Test("loki: a stream's labels are the host's; a sender's systemd_unit is no unit label, its fields stay in fields")
    func loki() throws {
        let lines = [Self.record.ndjsonLine[...], Self.journalRecord.ndjsonLine[...]]
        let body = try UploadFormat.loki.encoder.encode(lines)
        struct Push: Decodable {
            struct Stream: Decodable {
                var stream: [String: String]
                var values: [Entry]
            }

            /// `[time, line, {"log_record_uid": id}]`: the line alone is read here.
            struct Entry: Decodable {
                var line: String

                init(from decoder: any Decoder) throws {
                    var container = try decoder.unkeyedContainer()
                    _ = try container.decode(String.self)
                    line = try container.decode(String.self)
                }
            }

            var streams: [Stream]
        }
        let push = try JSONDecoder().decode(Push.self, from: Data(body))
        #expect(push.streams.map(\.stream) == [
            ["host": "web-1", "priority": "info"],
            ["host": "web-1", "priority": "error", "unit": "nginx.service"],
        ])
        let line = try #require(push.streams.first?.values.first?.line)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(Set(object.keys) == [
            "timestamp", "priority", "severity", "host", "source", "message", "pid", "uid", "gid", "comm", "fields",
        ])
        #expect(object["pid"] as? Int == 4242 && object["uid"] as? Int == 1000 && object["comm"] as? String == "worker")
        #expect(object["priority"] as? String == "info" && object["host"] as? String == "web-1")
        #expect((object["fields"] as? [String: String]) == Self.spoofedFields.dictionary)

        #expect(Self.decoded(body, as: .loki).records == [Self.record, Self.journalRecord])
    }

    @Test(
        "ndjson and json: a sender's fields stay inside fields, the top-level keys are the host's",
        arguments: [UploadFormat.ndjson, .json])
    func nestedFormats(format: UploadFormat) throws {
        let body = try format.encoder.encode([Self.record.ndjsonLine[...]])
        #expect(Self.decoded(body, as: format == .json ? .json : .ndjson).records == [Self.record])
    }

    @Test(
        "a JSON line claiming pid 1, uid 0, sshd reaches the receiver as what the kernel says, its fields kept",
        arguments: UploadFormat.allCases)
    func endToEnd(format: UploadFormat) async throws {
        let receiver = try await TestReceiver()
        let port = try #require(receiver.receiver.address.port)
        let daemon = try await TestDaemon.start(receiver: receiver) {
            $0.upload.url = "http://127.0.0.1:\(port)"
            $0.upload.format = format
            $0.hostname = "identity-host"
        }
        let claims = [
            "pid": "1", "uid": "0", "gid": "0", "comm": "sshd", "host": "bastion", "source": "journal",
            "priority": "0", "severity": "0", "message": "forged", "systemd_unit": "sshd.service",
            "process.pid": "1", "user.id": "0", "service.name": "sshd", "logship.priority": "crash",
        ]
        let fields = String(decoding: try JSONEncoder().encode(claims), as: UTF8.self)
        try await daemon.ingest([#"{"message":"Accepted password for root","fields":\#(fields)}"#])
        try await receiver.waitFor(records: 1)
        try await daemon.stop()

        let record = try #require(receiver.records.first)
        #expect(record.peer?.pid == getpid() && record.peer?.uid == geteuid() && record.peer?.gid == getegid())
        #expect(record.priority == .info && record.severity == .informational)
        #expect(record.host == "identity-host" && record.source == .socket)
        #expect(record.message == "Accepted password for root")
        // Journal names fold case and punctuation: `process.pid` comes back as `process_pid`.
        let expected = format == .journal
            ? Dictionary(uniqueKeysWithValues: claims.map { ($0.key.replacing(".", with: "_"), $0.value) })
            : claims
        #expect(record.fields.dictionary == expected)
    }
}

/// The per-format tables that carry the rule: what logshipd writes is in them, and a sender's key never lands on it.
@Suite("Upload formats: the names reserved for the host's word")
struct ReservedNamesTests {
    /// A record with every part a format writes, and no fields.
    static let everything = LogRecord(
        timestamp: Timestamp(rfc3339: "2026-11-21T10:00:00Z")!, priority: .crash, severity: .critical, host: "h",
        source: .journal, message: "m", peer: PeerCredentials(pid: 1, uid: 0, gid: 0, comm: "c"),
        fields: ["systemd_unit": "u.service"], truncated: true)

    @Test("every attribute the otlp encoder sets from a record's own parts is a reserved name")
    func otlpWritesOnlyReservedNames() throws {
        let body = try UploadFormat.otlpJSON.encoder.encode([Self.everything.ndjsonLine[...]])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let resourceLogs = try #require((object["resourceLogs"] as? [[String: Any]])?.first)
        let resource = try #require(resourceLogs["resource"] as? [String: Any])
        let scope = try #require((resourceLogs["scopeLogs"] as? [[String: Any]])?.first)
        let record = try #require((scope["logRecords"] as? [[String: Any]])?.first)
        func keys(_ attributes: Any?) -> Set<String> {
            Set((attributes as? [[String: Any]] ?? []).compactMap { $0["key"] as? String })
        }
        #expect(keys(resource["attributes"]) == OTLPAttributeNames.resource)
        #expect(keys(record["attributes"]) == OTLPAttributeNames.record)
    }

    @Test(
        "otlp: a sender's key is its attribute, or logship.field.<key> where logshipd's; the receiver gets it back",
        arguments: [
            ("request_id", "request_id"), ("syslog_identifier", "syslog_identifier"), ("systemd_unit", "systemd_unit"),
            ("process.pid", "logship.field.process.pid"), ("host.name", "logship.field.host.name"),
            ("service.name", "logship.field.service.name"), ("logship.truncated", "logship.field.logship.truncated"),
            ("logship.anything", "logship.field.logship.anything"),
            ("logship.field.process.pid", "logship.field.logship.field.process.pid"),
        ])
    func otlpFieldNames(key: String, attribute: String) {
        #expect(OTLPAttributeNames.attribute(forField: key) == attribute)
        #expect(OTLPAttributeNames.field(forAttribute: attribute) == key)
    }

    @Test("every name the journal encoder writes from a record's own parts is reserved")
    func journalWritesOnlyReservedNames() throws {
        let body = try UploadFormat.journal.encoder.encode([Self.everything.ndjsonLine[...]])
        let entry = try #require(JournalExportDecoder.entries(in: body).entries.first)
        let own = Set(entry.keys).subtracting(JournalFieldNames.written)
        #expect(own.allSatisfy { $0.hasPrefix(JournalFieldNames.namespace) }, "\(own)")
        #expect(entry["_SYSTEMD_UNIT"] == Array("u.service".utf8))
    }

    @Test(
        "journal: a sender's key is a journal name, FIELD_<NAME> where logshipd's (with or without _) or its prefixes",
        arguments: [
            ("syslog_identifier", "SYSLOG_IDENTIFIER", "syslog_identifier"),
            ("exampleSDID@32473.iut", "EXAMPLESDID_32473_IUT", "examplesdid_32473_iut"),
            ("priority", "FIELD_PRIORITY", "priority"), ("message", "FIELD_MESSAGE", "message"),
            ("_pid", "FIELD_PID", "pid"), ("pid", "FIELD_PID", "pid"), ("__comm", "FIELD_COMM", "comm"),
            ("hostname", "FIELD_HOSTNAME", "hostname"), ("systemd_unit", "FIELD_SYSTEMD_UNIT", "systemd_unit"),
            ("__realtime_timestamp", "FIELD_REALTIME_TIMESTAMP", "realtime_timestamp"),
            ("logship_source", "FIELD_LOGSHIP_SOURCE", "logship_source"),
            ("field_priority", "FIELD_FIELD_PRIORITY", "field_priority"),
            ("1st", "FIELD_1ST", "1st"), ("", "FIELD_", ""),
            (String(repeating: "a", count: 70), String(repeating: "A", count: 64), String(repeating: "a", count: 64)),
        ])
    func journalFieldNames(key: String, name: String, decoded: String) {
        #expect(JournalFieldNames.name(forField: key) == name)
        #expect(JournalFieldNames.field(forName: name) == decoded)
    }
}
