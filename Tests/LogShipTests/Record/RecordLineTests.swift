import Foundation
import NIOCore
import Testing

@testable import LogShip
@testable import LogShipRecord

@Suite("Record lines read in place")
struct RecordLineTests {
    static let full = LogRecord(
        timestamp: Timestamp(rfc3339: "2026-11-21T10:00:00.123456Z")!, priority: .crash, severity: .critical,
        host: "h\"1", source: .journal, message: "a\nb", peer: PeerCredentials(pid: -7, uid: .max, gid: 0, comm: "c"),
        fields: ["systemd_unit": "u.service", "z": "\\"], truncated: true)

    @Test("every part of a line, where the line holds it")
    func parts() throws {
        let bytes = Self.full.ndjsonLine[...]
        let line = try RecordLine(bytes)
        func text(_ part: RecordLine.Text?) -> String? { part.map { $0.escaped(in: bytes).string } }
        #expect(line.timestamp == Self.full.timestamp && line.priority == .crash && line.severity == .critical)
        #expect(line.source == .journal && line.truncated)
        #expect(
            text(line.host) == "h\"1" && line.host.hasEscapes
                && line.host.escaped(in: bytes).escaped.elementsEqual(#"h\"1"#.utf8))
        #expect(text(line.message) == "a\nb")
        #expect(line.peer.map { Array(bytes.dropFirst($0.pid.lowerBound).prefix($0.pid.count)) } == Array("-7".utf8))
        #expect(
            line.peer.map { Array(bytes.dropFirst($0.uid.lowerBound).prefix($0.uid.count)) }
                == Array("4294967295".utf8))
        #expect(text(line.peer?.comm) == "c")
        bytes.withUnsafeBufferPointer { buffer in
            #expect(
                line.fields(in: buffer).map { [text($0.key), text($0.value)] }
                    == [["systemd_unit", "u.service"], ["z", "\\"]])
            #expect(
                text(line.vouchedUnit) == "u.service"
                    && line.fieldsBesideVouchedUnit(in: buffer).map { text($0.key) } == ["z"])
        }
        #expect(line.fieldCount == 2)

        let bare = try RecordLine(LogRecord(
            timestamp: .init(microsecondsSinceEpoch: 0), priority: .info, severity: .informational, host: "h",
            source: .socket, message: "m").ndjsonLine[...])
        #expect(bare.peer == nil && bare.fields.isEmpty && bare.fieldCount == 0 && !bare.truncated)
    }

    @Test("a time the line's writer writes reads at fixed places as the RFC 3339 parser reads it")
    func canonicalTimestamps() {
        var generator = SeededGenerator(seed: 3339)
        let times = [Timestamp.range.lowerBound, -1, 0, Timestamp.range.upperBound]
            + (0..<2_000).map { _ in Int64.random(in: Timestamp.range, using: &generator) }
        for microseconds in times {
            let text = Array(Timestamp(microsecondsSinceEpoch: microseconds).rfc3339.utf8)
            let fast = text.withUnsafeBufferPointer { Timestamp(canonicalRFC3339UTF8: $0) }
            #expect(fast != nil && fast == Timestamp(rfc3339UTF8: text[...]), "\(microseconds)")
        }
        for other in [
            "2026-11-21T10:00:00.123456+00:00", "2026-13-21T10:00:00.123456Z", "2026-11-21T10:00:60.123456Z",
        ] {
            let fast = Array(other.utf8).withUnsafeBufferPointer { Timestamp(canonicalRFC3339UTF8: $0) }
            #expect(fast == nil || fast == Timestamp(rfc3339: other), "\(other)")
        }
    }

    @Test("anything but the writer's shape is refused at its first wrong byte", arguments: [
        (#"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"info","severity":6,"host":"h","source":"socket","#
            + #""message":"m","uid":1}"#, 116, "`}`"),
        (#"{"priority":"info"}"#, 0, "`{\"timestamp\":`"),
        (#"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"info","severity":06,"host":"h","source":"socket","#
            + #""message":"m"}"#, 72, "an integer from 0 to 7"),
        (#"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"info","severity":8,"host":"h","source":"socket","#
            + #""message":"m"}"#, 72, "an integer from 0 to 7"),
        (#"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"fatal","severity":6,"host":"h","source":"socket","#
            + #""message":"m"}"#, 55, "a priority class"),
        (#"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"info","severity":6,"host":"h","source":"socket","#
            + #""message":"\ud800"}"#, 114, "`\\u00` and an ASCII code"),
        (#"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"info","severity":6,"host":"h","source":"socket","#
            + #""message":"m","pid":2147483648,"uid":0,"gid":0}"#, 123, "an integer from -2147483648 to 2147483647"),
        (#"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"info","severity":6,"host":"h","source":"socket","#
            + #""message":"m"} "#, 117, "the end of the line"),
    ])
    func refused(line: String, offset: Int, expected: String) {
        #expect(throws: RecordLineError(offset: offset, expected: expected)) { try RecordLine(Array(line.utf8)[...]) }
    }

    @Test("raw control bytes and broken UTF-8 in a string are refused")
    func badStrings() {
        let prefix = #"{"timestamp":"2026-11-21T10:00:00.000000Z","priority":"info","severity":6,"host":"h","#
            + #""source":"socket","message":""#
        for bad: [UInt8] in [
            [0x0A], [0x09], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xFF],
        ] {
            let line = Array(prefix.utf8) + Array("ok".utf8) + bad + Array("\"}".utf8)
            #expect(throws: RecordLineError.self, "\(bad)") { try RecordLine(line[...]) }
        }
    }

    @Test("a journal name made from a key's bytes is the one made from its text, for every printable ASCII key shape")
    func journalNamesFromBytes() {
        var generator = SeededGenerator(seed: 64)
        let alphabet = Array(" !#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[]^_`abcxyz{|}~".utf8)
        let keys = ["", "_", "__", "1a", "pid", "_PID", "message", "logship_x", "field_x", "systemd_unit"]
            + (0..<2_000).map { _ in
                String(
                    decoding: (0..<Int.random(in: 1...70, using: &generator)).map { _ in
                        alphabet.randomElement(using: &generator)!
                    },
                    as: UTF8.self)
            }
        for key in keys {
            let line = Array(#"{"k":"\#(key)"}"#.utf8)
            let name = line.withUnsafeBufferPointer { line in
                var body = ByteBuffer()
                let text = RecordLine.Text(range: 6..<line.count - 2, hasEscapes: false)
                body.write(reserving: 128) { JournalFieldNames.writeName(forField: text, of: line, to: &$0) }
                return String(buffer: body)
            }
            #expect(name == JournalFieldNames.name(forField: key), "\(key)")
        }
    }
}
