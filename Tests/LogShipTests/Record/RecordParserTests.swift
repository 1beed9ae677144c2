import Foundation
import Testing

import LogShipTestKit
@testable import LogShipRecord

@Suite("Record parsing")
struct RecordParserTests {
    let parser = RecordParser(hostname: "testhost")
    let peer = PeerCredentials(pid: 42, uid: 1000, gid: 100, comm: "app")
    let arrival = Timestamp(rfc3339: "2026-11-21T10:00:00.123456Z")!

    func parse(_ text: String, truncated: Bool = false) -> LogRecord {
        parser.parse(
            Frame(bytes: Array(text.utf8), truncated: truncated), source: .socket, peer: peer, receivedAt: arrival)
    }

    @Test("plain text is an info record stamped with arrival time, host and the kernel's peer")
    func plainText() {
        let record = parse("hello world\n")
        #expect(record.message == "hello world")
        #expect(record.priority == .info)
        #expect(record.severity == .informational)
        #expect(record.timestamp == arrival)
        #expect(record.host == "testhost")
        #expect(record.peer == peer)
        #expect(record.fields.isEmpty)
        #expect(!record.truncated)
    }

    @Test("an sd-daemon prefix sets the severity and is removed", arguments: [
        ("<3>disk failed", 3, PriorityClass.error), ("<4>low space", 4, .warning), ("<5>notice", 5, .warning),
        ("<6>fine", 6, .info), ("<7>noise", 7, .debug), ("<0>panic", 0, .error),
    ])
    func sdDaemonPrefix(line: String, severity: Int, priority: PriorityClass) {
        let record = parse(line)
        #expect(record.severity.rawValue == severity)
        #expect(record.priority == priority)
        #expect(record.message == String(line.dropFirst(3)))
        #expect(record.fields["syslog_facility"] == nil)
    }

    @Test("RFC 3164 as logger sends it locally, without a host name")
    func rfc3164Local() {
        let record = parse("<13>Nov 21 09:59:58 root: hello stream\n")
        #expect(record.message == "hello stream")
        #expect(record.severity == .notice)
        #expect(record.fields["syslog_identifier"] == "root")
        #expect(record.fields["syslog_facility"] == "user")
        #expect(record.fields["syslog_hostname"] == nil)
        #expect(record.timestamp == Timestamp.local(year: 2026, month: 11, day: 21, hour: 9, minute: 59, second: 58))
    }

    @Test("RFC 3164 with host name, tag and pid, as glibc syslog() and logger --rfc3164 send it")
    func rfc3164WithHost() {
        let record = parse("<11>Nov  1 05:06:08 otherhost cron[812]: job failed: exit 2")
        #expect(record.message == "job failed: exit 2")
        #expect(record.priority == .error)
        #expect(record.fields["syslog_hostname"] == "otherhost")
        #expect(record.fields["syslog_identifier"] == "cron")
        #expect(record.fields["syslog_pid"] == "812")
        #expect(record.peer?.pid == 42, "the pid in the payload must not replace the kernel's")
    }

    @Test("a PRI with no header after it, as Python's SysLogHandler sends, keeps its text, severity and facility")
    func priorityOnly() {
        let record = parse("<11>e1")
        #expect(record.message == "e1")
        #expect(record.severity == .error)
        #expect(record.fields["syslog_facility"] == "user")
        let daemon = parse("<30>py-stream info three")
        #expect(daemon.message == "py-stream info three" && daemon.severity == .informational)
        #expect(daemon.fields["syslog_facility"] == "daemon")
        #expect(parse("<3>sd-daemon form").fields["syslog_facility"] == nil, "one digit 0-7 is the sd-daemon prefix")
        #expect(parse("<9>alert").fields["syslog_facility"] == "user" && parse("<9>alert").severity == .alert)
    }

    @Test("RFC 3164 without a tag keeps the whole rest as message")
    func rfc3164WithoutTag() {
        let record = parse("<14>Nov 21 09:59:58 just some words")
        #expect(record.message == "just some words")
        #expect(record.fields["syslog_identifier"] == nil)
    }

    @Test("RFC 3164 picks the year that puts the message nearest its arrival")
    func rfc3164YearRollover() {
        let newYear = Timestamp(rfc3339: "2027-01-01T00:00:05Z")!
        let record = parser.parse(
            Frame(bytes: Array("<13>Dec 31 23:59:59 tag: late".utf8)), source: .socket, peer: nil, receivedAt: newYear)
        #expect(record.timestamp.utcYear == 2026 || record.timestamp.utcYear == 2027)
        #expect(abs(record.timestamp.microsecondsSinceEpoch - newYear.microsecondsSinceEpoch) < 2 * 86_400 * 1_000_000)
    }

    /// A header after the timestamp, and what it gives: host name, tag, pid and message.
    struct TagCase: Sendable, CustomTestStringConvertible {
        var header: String
        var hostname: String?
        var identifier: String?
        var processID: String?
        var message: String
        var testDescription: String { header }
    }

    @Test("RFC 3164 tags: TAG: and TAG[PID]:, a host name before them; anything else is the message", arguments: [
        TagCase(header: "tag: m", identifier: "tag", message: "m"),
        TagCase(header: "tag[42]: m", identifier: "tag", processID: "42", message: "m"),
        TagCase(header: "tag[]: m", identifier: "tag", message: "m"),
        TagCase(header: "web-17 nginx[7]: m", hostname: "web-17", identifier: "nginx", processID: "7", message: "m"),
        TagCase(header: "[42]: m", message: "[42]: m"),
        TagCase(header: "a[: m", message: "a[: m"),
        TagCase(header: ": m", message: ": m"),
        TagCase(header: "tag:m", message: "tag:m"),
    ])
    func rfc3164Tags(_ tagCase: TagCase) {
        let record = parse("<14>Nov 21 09:59:58 \(tagCase.header)")
        #expect(record.fields["syslog_hostname"] == tagCase.hostname)
        #expect(record.fields["syslog_identifier"] == tagCase.identifier)
        #expect(record.fields["syslog_pid"] == tagCase.processID)
        #expect(record.message == tagCase.message)
    }

    @Test("RFC 3164 reads each of the twelve months by its English abbreviation, and no other spelling")
    func rfc3164Months() throws {
        let names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        for (index, name) in names.enumerated() {
            let sent = try #require(
                Timestamp.local(year: 2026, month: index + 1, day: 15, hour: 12, minute: 0, second: 0))
            let line = Frame(bytes: Array("<14>\(name) 15 12:00:00 tag: m".utf8))
            let record = parser.parse(line, source: .socket, peer: nil, receivedAt: sent)
            #expect(record.timestamp == sent && record.message == "m", "\(name)")
        }
        for name in ["JAN", "jan", "Jul.", "Jux", "Ja"] {
            #expect(parse("<14>\(name) 15 12:00:00 tag: m").fields["syslog_identifier"] == nil, "\(name)")
        }
    }

    @Test("RFC 5424 with structured data, message id and BOM")
    func rfc5424() {
        let line =
            "<11>1 2026-11-21T05:06:08.772391+01:00 vm mytag 1234 ID47 "
                + "[timeQuality tzKnown=\"1\"][zoo@123 tiger=\"hungry \\\"cat\\\"\"] \u{FEFF}hello 5424"
        let record = parse(line)
        #expect(record.message == "hello 5424")
        #expect(record.severity == .error)
        #expect(record.timestamp == Timestamp(rfc3339: "2026-11-21T04:06:08.772391Z"))
        #expect(record.fields["syslog_identifier"] == "mytag")
        #expect(record.fields["syslog_pid"] == "1234")
        #expect(record.fields["syslog_msgid"] == "ID47")
        #expect(record.fields["syslog_hostname"] == "vm")
        #expect(record.fields["timeQuality.tzKnown"] == "1")
        #expect(record.fields["zoo@123.tiger"] == "hungry \"cat\"")
    }

    @Test("RFC 5424 with nil fields and no structured data")
    func rfc5424Nil() {
        let record = parse("<14>1 - - - - - - bare")
        #expect(record.message == "bare")
        #expect(record.timestamp == arrival)
        #expect(record.fields == ["syslog_facility": "user"])
    }

    @Test("JSON lines set priority, severity, fields and timestamp")
    func jsonLine() {
        let record = parse(
            #"{"priority":"crash","message":"segfault","timestamp":"2026-11-20T01:02:03.5Z","#
                + #""fields":{"worker":7,"ok":false},"service":"api"}"#)
        #expect(record.priority == .crash)
        #expect(record.severity == .critical)
        #expect(record.message == "segfault")
        #expect(record.timestamp == Timestamp(rfc3339: "2026-11-20T01:02:03.500000Z"))
        #expect(record.fields == ["worker": "7", "ok": "false", "service": "api"])
    }

    @Test("JSON priority may be a severity name or number", arguments: [
        (#"{"priority":"err","message":"x"}"#, PriorityClass.error, 3),
        (#"{"priority":4,"message":"x"}"#, .warning, 4),
        (#"{"severity":"debug","message":"x"}"#, .debug, 7),
        (#"{"priority":"error","severity":1,"message":"x"}"#, .error, 1),
    ])
    func jsonPriorities(line: String, priority: PriorityClass, severity: Int) {
        let record = parse(line)
        #expect(record.priority == priority)
        #expect(record.severity.rawValue == severity)
    }

    @Test("an invalid JSON line is kept as plain text")
    func invalidJSON() {
        let record = parse(#"{"priority":"crash","message": oops"#)
        #expect(record.message == #"{"priority":"crash","message": oops"#)
        #expect(record.priority == .info)
    }

    @Test("a JSON object without a message is kept whole")
    func jsonWithoutMessage() {
        let line = #"{"event":"login","user":"ann"}"#
        #expect(parse(line).message == line)
    }

    @Test("a JSON line with 60 000 fields keeps the first 1 000 as fields and the rest in its message, marked")
    func manyJSONFields() throws {
        let members = (0..<60_000).map { #""f\#($0)":\#($0)"# }
        let line = #"{"message":"many","fields":{"# + members[..<30_000].joined(separator: ",") + "},"
            + members[30_000...].joined(separator: ",") + "}"
        let record = parse(line)
        #expect(record.fields.count == 1_000 + 1)
        #expect(record.fields["fields_over_limit"] == "59000")
        #expect(record.fields["f0"] == "0" && record.fields["f999"] == "999" && record.fields["f1000"] == nil)
        let lines = record.message.split(separator: "\n", maxSplits: 1).map(String.init)
        #expect(lines.first == "many")
        let rest = try JSONDecoder().decode([String: Int].self, from: Data(try #require(lines.last).utf8))
        #expect(rest.count == 59_000)
        #expect(
            rest["f1000"] == 1000 && rest["f29999"] == 29_999 && rest["f30000"] == 30_000 && rest["f59999"] == 59_999)
    }

    @Test("a JSON line within the field limit is read whole; a sender's fields_over_limit is kept under sender_")
    func jsonFieldsWithinLimit() {
        let members = (0..<1_000 - 1).map { #""f\#($0)":"v""# }.joined(separator: ",")
        let record = parse(#"{"message":"m","fields_over_limit":"7","# + members + "}")
        #expect(record.message == "m")
        #expect(record.fields.count == 1_000)
        #expect(record.fields["sender_fields_over_limit"] == "7" && record.fields["fields_over_limit"] == nil)
    }

    @Test("invalid UTF-8 is repaired, never fatal")
    func invalidUTF8() {
        let bytes: [UInt8] = Array("bad ".utf8) + [0xFF, 0xC3] + Array(" end".utf8)
        let record = parser.parse(Frame(bytes: bytes), source: .socket, peer: nil, receivedAt: arrival)
        #expect(record.message == "bad \u{FFFD}\u{FFFD} end")
    }

    @Test("a cut in the middle of a UTF-8 sequence drops the partial character")
    func truncatedUTF8() {
        let bytes = Array("abcé".utf8).dropLast()
        let record = parser.parse(
            Frame(bytes: Array(bytes), truncated: true), source: .socket, peer: nil, receivedAt: arrival)
        #expect(record.message == "abc")
        #expect(record.truncated)
    }

    @Test("an RFC 3164 day of many digits is no timestamp, and does not overflow (found by the fuzzer)")
    func longDay() {
        let line = "<13>Nov " + String(repeating: "4", count: 40) + " 10:00:00 app: text"
        let record = parser.parse(Frame(bytes: Array(line.utf8)), source: .socket, peer: nil, receivedAt: arrival)
        #expect(record.message == "Nov " + String(repeating: "4", count: 40) + " 10:00:00 app: text")
        #expect(record.timestamp == arrival)
    }

    @Test("random bytes always parse to some record")
    func randomBytes() async {
        // Seconds of computing in this debug build: off the cooperative pool every test shares.
        await computedOffThePool {
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<2000 {
                let count = Int.random(in: 0..<300, using: &generator)
                var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if Bool.random(using: &generator) { bytes = Array("<13>1 ".utf8) + bytes }
                if Bool.random(using: &generator) { bytes = Array("<13>Nov 21 09:59:58 ".utf8) + bytes }
                let record = parser.parse(Frame(bytes: bytes), source: .socket, peer: nil, receivedAt: arrival)
                #expect(record.host == "testhost")
                #expect(record.ndjsonLine.first == UInt8(ascii: "{"))
            }
        }
    }

    @Test("""
        thousands of structured-data parameters, given in reverse order, all arrive sorted; the last of a repeated one \
        wins
        """)
    func manyParameters() {
        let parameters = (0..<8_000).reversed().map { String(format: "p%05d=\"%d\"", $0, $0) }.joined(separator: " ")
        let line = "<14>1 2026-11-21T10:00:00Z host app - - [x \(parameters) p00007=\"again\"] body"
        let record = parse(line)
        #expect(record.fields.count == 8_000 + 3)  // and syslog_facility, syslog_hostname, syslog_identifier
        let keys = record.fields.map(\.key)
        #expect(keys == keys.sorted())
        #expect(record.fields["x.p00007"] == "again" && record.fields["x.p07999"] == "7999")
    }

    @Test("merging fields keeps key order, and the fields merged in win")
    func mergeFields() {
        var fields: RecordFields = ["b": "1", "d": "1", "f": "1"]
        fields.merge(["a": "2", "d": "2", "g": "2"])
        #expect(fields.map(\.key) == ["a", "b", "d", "f", "g"])
        #expect(fields["d"] == "2" && fields["b"] == "1")
        #expect(RecordFields([("k", "1"), ("j", "x"), ("k", "2")]).map { "\($0.key)=\($0.value)" } == ["j=x", "k=2"])
    }

    @Test("an ASCII RFC 3164 frame is written straight to the record's NDJSON line, byte for byte", arguments: [
        "<14>Nov 22 10:00:00 web-17 nginx[4242]: GET /api/v1/orders/1 200 12ms",
        "<13>Nov 22 10:00:00 testhost app: from the local host, whose name is left out",
        "<11>Nov  2 23:59:59 app[7]: no host name, a padded day",
        "<190>Dec 31 23:59:60 host tag[]: an empty pid and a leap second",
        "<0>Feb 30 10:00:00 host kernel: a date that does not exist: stamped on arrival",
        "<14>Nov 22 10:00:00 web-17 nginx: quotes \" and \\ backslashes and \t\u{01} controls",
        "<14>Nov 22 10:00:00 just a message, no tag",
        "<14>Nov 22 10:00:00 ",
        "<14>Nov 22 10:00:00 web-17 app: a CRLF line with trailing NULs\r\n\0\0",
    ])
    func encodedRFC3164(_ line: String) throws {
        let frames = [
            (Frame(bytes: Array(line.utf8)), Optional(peer)), (Frame(bytes: Array(line.utf8), truncated: true), nil),
        ]
        for (frame, sender) in frames {
            let direct = try #require(
                parser.encodeRFC3164(frame.content, of: frame, source: .socket, peer: sender, receivedAt: arrival),
                "not taken for \(line)")
            let record = parser.parse(frame, source: .socket, peer: sender, receivedAt: arrival)
            #expect(String(decoding: direct.line, as: UTF8.self) == String(decoding: record.ndjsonLine, as: UTF8.self))
            #expect(direct.line == record.ndjsonLine && direct.priority == record.priority)
            #expect(direct.truncated == frame.truncated)
        }
    }

    @Test("any other frame is encoded through the record", arguments: [
        "<14>Nov 22 10:00:00 web-17 app: non-ASCII text: \u{e9}t\u{e9}",
        "<14>Nov 22 10:00:00 h\u{f6}st app: a non-ASCII host name",
        "<14>1 2026-11-21T10:00:00Z host app 12 id [x a=\"1\"] RFC 5424",
        "{\"message\":\"a JSON line\",\"priority\":\"crash\"}",
        "<3>an sd-daemon prefix",
        "plain text",
    ])
    func encodedThroughRecord(_ line: String) {
        let frame = Frame(bytes: Array(line.utf8))
        #expect(parser.encodeRFC3164(frame.content, of: frame, source: .socket, peer: peer, receivedAt: arrival) == nil)
        let record = parser.parse(frame, source: .socket, peer: peer, receivedAt: arrival)
        #expect(parser.encode(frame, source: .socket, peer: peer, receivedAt: arrival) == EncodedRecord(record))
    }

    @Test("a local host name with non-ASCII characters sends a host-named RFC 3164 line through the record")
    func nonASCIILocalHostname() {
        let parser = RecordParser(hostname: "h\u{f6}st")
        let frame = Frame(bytes: Array("<14>Nov 22 10:00:00 web-17 app: text".utf8))
        #expect(parser.encodeRFC3164(frame.content, of: frame, source: .socket, peer: peer, receivedAt: arrival) == nil)
        #expect(parser.encode(frame, source: .socket, peer: peer, receivedAt: arrival)
            == EncodedRecord(parser.parse(frame, source: .socket, peer: peer, receivedAt: arrival)))
    }

    @Test("invalid UTF-8 in an RFC 3164 line is repaired as in the record")
    func invalidUTF8RFC3164() {
        let frame = Frame(bytes: Array("<14>Nov 22 10:00:00 web-17 app: ".utf8) + [0xC3, 0x28, 0xFF])
        #expect(parser.encodeRFC3164(frame.content, of: frame, source: .socket, peer: peer, receivedAt: arrival) == nil)
        #expect(parser.encode(frame, source: .socket, peer: peer, receivedAt: arrival).line
            == parser.parse(frame, source: .socket, peer: peer, receivedAt: arrival).ndjsonLine)
    }

    @Test("a sender's crash_reason, crash_unit or demoted_from is kept under sender_, never taken for the daemon's")
    func fieldsOnlyTheDaemonSets() {
        let frame = Frame(bytes: Array(
            (#"{"message":"x","crash_reason":"segfault","#
                + #""fields":{"crash_unit":"sshd.service","demoted_from":"none","k":"v"}}"#).utf8))
        let record = RecordParser(hostname: "h").parse(
            frame, source: .socket, peer: nil, receivedAt: Timestamp(microsecondsSinceEpoch: 0))
        #expect(record.fields == [
            "sender_crash_reason": "segfault", "sender_crash_unit": "sshd.service", "sender_demoted_from": "none",
            "k": "v",
        ])
        let submitted = SubmissionReader(hostname: "h", maximumRecordBytes: 1024).record(
            from: Submission(message: "x", fields: ["crash_pid": "1", "crash_comm": "init"]),
            peer: PeerCredentials(pid: 7, uid: 1000, gid: 1000, comm: "c"),
            receivedAt: Timestamp(microsecondsSinceEpoch: 0))
        #expect((try? submitted.get())?.fields == ["sender_crash_pid": "1", "sender_crash_comm": "init"])
    }
}
