import Foundation
import LogShipTestKit
import OTLPProto
import SwiftProtobuf
import Testing

@testable import LogShip
@testable import LogShipRecord

/// Issue 31, point 1: OTLP, Loki and journal export written straight from the spooled lines say what decoding each
/// line and encoding it again said (``ReferenceEncoders``), for every kind of record, and refuse a damaged line
/// where decoding refused it.
@Suite("Direct encoders: the same bodies as decoding and encoding again")
struct DirectEncoderTests {
    static let formats: [UploadFormat] = [.otlp, .otlpJSON, .loki, .journal]

    @Test("2 000 records of every kind, in batches of 40: the same body as the reference, parsed", arguments: formats)
    func sameAsReference(format: UploadFormat) async throws {
        // Seconds of computing in this debug build: off the cooperative pool every test shares.
        try await computedOffThePool {
            var generator = SeededGenerator(seed: 31)
            let records = (0..<2_000).map { _ in OddRecords.record(using: &generator) }
            for start in stride(from: 0, to: records.count, by: 40) {
                let lines = records[start..<start + 40].map { $0.ndjsonLine[...] }
                try Self.expectSame(
                    try format.encoder.encode(lines), try ReferenceEncoders.encode(lines, as: format), format)
            }
        }
    }

    @Test("every odd string, alone, as message, host, comm, unit, field key and field value", arguments: formats)
    func eachOddString(format: UploadFormat) async throws {
        // Seconds of computing in this debug build: off the cooperative pool every test shares.
        try await computedOffThePool {
            for text in OddRecords.strings {
                let record = LogRecord(
                    timestamp: Timestamp(microsecondsSinceEpoch: 0), priority: .error, severity: .error, host: text,
                    source: .journal, message: text, peer: PeerCredentials(pid: -1, uid: .max, gid: 0, comm: text),
                    fields: RecordFields([("systemd_unit", text), (text, text), ("k", text)]), truncated: true)
                let lines = [record.ndjsonLine[...]]
                try Self.expectSame(
                    try format.encoder.encode(lines), try ReferenceEncoders.encode(lines, as: format), format)
            }
        }
    }

    @Test(
        """
        a damaged line: refused, named by its place in the batch, wherever decoding refused it; never a different body
        """,
        arguments: formats)
    func damagedLines(format: UploadFormat) async throws {
        // Seconds of computing in this debug build: off the cooperative pool every test shares.
        try await computedOffThePool {
            var generator = SeededGenerator(seed: 7)
            let good = (0..<3).map { _ in OddRecords.record(using: &generator, maximumLength: 40).ndjsonLine }
            var damaged: [[UInt8]] = []
            for line in good {
                damaged += (0..<line.count).map { Array(line[..<$0]) }
                for index in line.indices {
                    for replacement: UInt8 in [0x00, 0x09, 0x22, 0x5C, 0x7B, 0x30, 0x80, 0xC0, 0xED, 0xFF] {
                        var copy = line
                        copy[index] = replacement
                        damaged.append(copy)
                    }
                }
            }
            var refused = 0
            for line in damaged {
                let batch = [good[0][...], line[...]]
                let reference = Result { try ReferenceEncoders.encode(batch, as: format) }
                do {
                    let body = try format.encoder.encode(batch)
                    let expected = try #require(
                        try? reference.get(),
                        "written, where decoding refused: \(String(decoding: line, as: UTF8.self))")
                    try Self.expectSame(body, expected, format, line: line)
                } catch let error as UnreadableRecordLine {
                    refused += 1
                    #expect(
                        error.index == 1
                            && "\(error)".hasPrefix("record 2 of the batch is not a spooled record line: "))
                }
            }
            #expect(refused > damaged.count / 2)
        }
    }

    /// Journal export bodies byte for byte; JSON bodies as parsed values (the escapes may differ: `\b` or `\u0008`);
    /// an OTLP protobuf body as the message its JSON reference is, in the bytes protobuf's own encoder makes of it.
    static func expectSame(_ body: [UInt8], _ expected: [UInt8], _ format: UploadFormat, line: [UInt8] = []) throws {
        guard format != .journal else {
            #expect(body == expected, "\(String(decoding: line, as: UTF8.self))")
            return
        }
        guard format != .otlp else {
            let message = try Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest(serializedBytes: body)
            let reference = try Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest(jsonUTF8Bytes: expected)
            #expect(message == reference, "\(String(decoding: line, as: UTF8.self))")
            #expect(try message.serializedBytes() == body, "not protobuf's own encoding")
            return
        }
        let parsed = try JSONSerialization.jsonObject(with: Data(body)) as? NSObject
        let parsedExpected = try JSONSerialization.jsonObject(with: Data(expected)) as? NSObject
        #expect(parsed != nil && parsed == parsedExpected, "\(String(decoding: body, as: UTF8.self))")
    }
}

/// Records with what breaks encoders: every control byte, quotes and backslashes, non-ASCII of every length,
/// reserved names as field keys, huge strings, absent optional parts, extreme numbers and times.
enum OddRecords {
    static let strings: [String] = [
        "", "plain", "quote \" backslash \\ slash / tab \t", "line\nbreak\r\n",
        String(decoding: (0..<32).map { UInt8($0) }, as: UTF8.self),
        "\u{7F}del", "é ü ß ﬃ", "日本語のログ", "emoji 🚀👩‍👩‍👧",
        "e\u{301}", "\u{2028}\u{2029}", "\u{FEFF}bom", "\u{10FFFF}",
        "\\u0000 not an escape", "{\"json\":[1,2]}", String(repeating: "x", count: 70_000),
        String(repeating: "\"\\\n", count: 5_000),
    ]

    static let keys: [String] = [
        "request_id", "syslog_identifier", "systemd_unit", "process.pid", "host.name", "service.name", "logship.x",
        "logship.field.process.pid", "priority", "_pid", "__realtime_timestamp", "logship_source", "field_x", "1st", "",
        "exampleSDID@32473.iut", "straße", "ключ", "a\nb", "tab\tkey", "quote\"key", "e\u{301}", "\r\n",
        String(repeating: "k", count: 80),
    ]

    static func record(using generator: inout SeededGenerator, maximumLength: Int = .max) -> LogRecord {
        func pick(_ strings: [String]) -> String {
            let text = strings.randomElement(using: &generator)!
            return text.utf8.count <= maximumLength ? text : "short"
        }
        var fields = RecordFields()
        for _ in 0..<Int.random(in: 0...5, using: &generator) {
            fields[pick(keys)] = pick(strings)
        }
        let times: [Int64] = [
            0, -1, Timestamp.range.lowerBound, Timestamp.range.upperBound, 1_795_255_200_123_456,
            Int64.random(in: Timestamp.range, using: &generator),
        ]
        let peer = Bool.random(using: &generator)
            ? PeerCredentials(
                pid: [Int32.min, -1, 0, 1, 4242, .max].randomElement(using: &generator)!,
                uid: [0, 1000, .max].randomElement(using: &generator)!,
                gid: [0, 33, .max].randomElement(using: &generator)!,
                comm: Bool.random(using: &generator) ? pick(strings) : nil)
            : nil
        let severity = Severity(rawValue: Int.random(in: 0...7, using: &generator))!
        return LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: times.randomElement(using: &generator)!),
            priority: PriorityClass.allCases.randomElement(using: &generator)!, severity: severity,
            host: Bool.random(using: &generator) ? "web-1" : pick(strings),
            source: [LogRecord.Source.socket, .datagram, .control, .journal].randomElement(using: &generator)!,
            message: pick(strings), peer: peer, fields: fields, truncated: Bool.random(using: &generator))
    }
}

/// SplitMix64: the same records on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
