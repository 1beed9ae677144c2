import Foundation
import Testing

import LogShipTestKit
@testable import LogShipRecord

@Suite("Record encoding")
struct RecordEncodingTests {
    @Test("timestamps format as RFC 3339 UTC with microseconds", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000000Z"),
        (1_795_255_200_123_456, "2026-11-21T10:00:00.123456Z"),
        (951_782_400_000_001, "2000-02-29T00:00:00.000001Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
    ])
    func timestampFormat(micros: Int64, text: String) {
        #expect(Timestamp(microsecondsSinceEpoch: micros).rfc3339 == text)
        #expect(Timestamp(rfc3339: text)?.microsecondsSinceEpoch == micros)
    }

    @Test("RFC 3339 offsets are applied and bad text rejected")
    func timestampParsing() {
        #expect(Timestamp(rfc3339: "2026-11-21T12:00:00+02:00") == Timestamp(rfc3339: "2026-11-21T10:00:00Z"))
        #expect(Timestamp(rfc3339: "2026-11-21T10:00:00.1234567891Z")?.microsecondsSinceEpoch == 1_795_255_200_123_456)
        for bad in ["", "2026-11-21", "2026-13-01T00:00:00Z", "2026-11-21T10:00:00", "2026-11-21T10:00:00.Z", "x"] {
            #expect(Timestamp(rfc3339: bad) == nil, "\(bad)")
        }
    }

    @Test("NDJSON has the contract's keys in order and round-trips")
    func ndjsonRoundTrip() throws {
        let record = LogRecord(
            timestamp: Timestamp(rfc3339: "2026-11-21T10:00:00.123456Z")!,
            priority: .crash, severity: .critical, host: "h", source: .control,
            message: "quote \" backslash \\ newline \n tab \t nul \u{0} é",
            peer: PeerCredentials(pid: 1, uid: 0, gid: 0, comm: "init"),
            fields: ["b": "2", "a": "1"], truncated: true)
        let line = String(decoding: record.ndjsonLine, as: UTF8.self)
        #expect(line.hasPrefix(
            #"{"timestamp":"2026-11-21T10:00:00.123456Z","priority":"crash","severity":2,"host":"h","#
                + #""source":"control","message":"quote \" backslash \\ newline \n tab \t nul \u0000 é","#
                + #""pid":1,"uid":0,"gid":0,"#
                + #""comm":"init","fields":{"a":"1","b":"2"},"truncated":true}"#))
        let decoded = try JSONDecoder().decode(LogRecord.self, from: Data(record.ndjsonLine))
        #expect(decoded == record)
    }

    @Test(
        """
        the widest records fit the room the encoder sizes for them: every key and number at its longest, strings plain \
        or all escapes
        """,
        arguments: ["", "p", String(decoding: (0..<32).map { UInt8($0) }, as: UTF8.self)])
    func widestRecord(text: String) throws {
        var fields = RecordFields()
        for index in 0..<20 { fields["\(text)\(index)"] = text }
        let record = LogRecord(
            timestamp: Timestamp(rfc3339: "9999-12-31T23:59:59.999999Z")!, priority: .warning, severity: .debug,
            host: text, source: .datagram, message: String(repeating: text, count: 10),
            peer: PeerCredentials(pid: Int32.min, uid: .max, gid: .max, comm: text), fields: fields, truncated: true)
        // The test build checks every store against the room sized: an overrun traps here.
        let line = record.ndjsonLine
        #expect(try JSONDecoder().decode(LogRecord.self, from: Data(line)) == record)
    }

    @Test("unknown values are left out")
    func absentKeys() {
        let record = LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: 0), priority: .info, severity: .informational, host: "h",
            source: .socket, message: "m")
        #expect(String(decoding: record.ndjsonLine, as: UTF8.self)
            == #"{"timestamp":"1970-01-01T00:00:00.000000Z","priority":"info","severity":6,"host":"h","#
                + #""source":"socket","message":"m"}"#)
    }

    @Test("priorities resolve from class names and severities", arguments: [
        ("crash", PriorityClass.crash, 2), ("ERROR", .error, 3), ("warning", .warning, 4), ("info", .info, 6),
        ("debug", .debug, 7), ("0", .error, 0), ("5", .warning, 5), ("notice", .warning, 5), ("emerg", .error, 0),
    ])
    func priorityResolution(text: String, priority: PriorityClass, severity: Int) throws {
        let resolved = try #require(PriorityClass.resolve(text))
        #expect(resolved.0 == priority)
        #expect(resolved.1.rawValue == severity)
    }

    @Test("unknown priorities do not resolve", arguments: ["8", "-1", "fatal", ""])
    func unknownPriority(text: String) {
        #expect(PriorityClass.resolve(text) == nil)
    }
}
