import Foundation
import LogShipTestKit
import Testing

@testable import LogShip

/// Journal entries to records, without a journal.
@Suite("Journal entries as records")
struct JournalRecordMapperTests {
    let mapper = JournalRecordMapper(
        selection: .init(excludedUnits: ["logshipd.service"]), hostname: "local", extraFields: ["REQUEST_ID"],
        maximumFieldBytes: 64)

    func entry(_ fields: [String: String], realtime: UInt64 = 1_795_255_200_000_001) -> JournalEntry {
        JournalEntry(realtime: realtime, fields: fields.mapValues { Array($0.utf8) })
    }

    @Test("journald's own fields give the identity, the host and the time; the rest become fields")
    func mapping() throws {
        let record = try #require(mapper.record(for: entry([
            "MESSAGE": "started", "PRIORITY": "5", "_HOSTNAME": "web1", "_PID": "42", "_UID": "0", "_GID": "4",
            "_COMM": "nginx", "_SYSTEMD_UNIT": "nginx.service", "SYSLOG_IDENTIFIER": "nginx", "CODE_LINE": "12",
            "REQUEST_ID": "abc", "OTHER": "not asked for",
        ])))
        #expect(record.message == "started" && record.host == "web1" && record.source == .journal)
        #expect(record.severity == .notice && record.priority == .warning)
        #expect(record.peer == PeerCredentials(pid: 42, uid: 0, gid: 4, comm: "nginx"))
        #expect(record.timestamp == Timestamp(microsecondsSinceEpoch: 1_795_255_200_000_001))
        #expect(record.fields == [
            "systemd_unit": "nginx.service", "syslog_identifier": "nginx", "code_line": "12", "request_id": "abc",
        ])
    }

    @Test("no _HOSTNAME is the configured host, no PRIORITY is info, no _UID is no identity")
    func defaults() throws {
        let record = try #require(mapper.record(for: entry(["MESSAGE": "x", "_PID": "42"])))
        #expect(record.host == "local" && record.severity == .informational && record.peer == nil)
    }

    @Test("a coredump is a crash whatever its PRIORITY, counts as the unit that crashed, and carries COREDUMP_*")
    func coredump() throws {
        let fields = [
            "MESSAGE": "Process 1 dumped core.", "PRIORITY": "6", "MESSAGE_ID": JournalRecordMapper.coredumpMessageID,
            "_SYSTEMD_UNIT": "systemd-coredump@0.service", "COREDUMP_UNIT": "worker.service", "COREDUMP_EXE": "/bin/w",
        ]
        let record = try #require(mapper.record(for: entry(fields)))
        #expect(record.priority == .crash && record.fields["coredump_exe"] == "/bin/w")
        var onlyWorker = mapper
        onlyWorker.selection = .init(units: ["worker.service"], leastImportant: .error)
        #expect(onlyWorker.record(for: entry(fields)) != nil, "selected by the unit that crashed, despite its priority")
        #expect(mapper.fieldsToRead(isCoredump: false).contains("COREDUMP_EXE") == false)
        #expect(!mapper.fieldsToRead(isCoredump: true).contains("COREDUMP"), "the core itself is never read")
    }

    @Test("the selection: units, excluded units, least important severity")
    func selection() {
        var selective = mapper
        selective.selection = .init(units: ["a.service"], excludedUnits: ["b.service"], leastImportant: .warning)
        #expect(selective.record(for: entry(["_SYSTEMD_UNIT": "a.service", "PRIORITY": "4"])) != nil)
        #expect(selective.record(for: entry(["_SYSTEMD_UNIT": "a.service", "PRIORITY": "5"])) == nil)
        #expect(selective.record(for: entry(["_SYSTEMD_UNIT": "c.service", "PRIORITY": "0"])) == nil)
        #expect(selective.record(for: entry(["PRIORITY": "0"])) == nil, "no unit is not one of the units")
        #expect(mapper.record(for: entry(["_SYSTEMD_UNIT": "logshipd.service"])) == nil, "never its own logs")
    }

    @Test("a message that reached max_field_bytes is marked truncated, without a broken last character")
    func truncated() throws {
        // 64 bytes in all with "MESSAGE=": a cut inside the three-byte "€".
        let cut = Array(String(repeating: "x", count: 54).utf8) + [0xE2, 0x82]
        let record = try #require(mapper.record(for: JournalEntry(realtime: 1, fields: ["MESSAGE": cut])))
        #expect(record.truncated && record.message == String(repeating: "x", count: 54))
    }

    @Test("a cursor's time is its t= field, in hex; a corrupt cursor has none")
    func cursorTime() {
        #expect(JournalCursor.realtime(of: "s=a2;i=1;b=00;m=0;t=660c66c7a2800;x=11") == 0x660c66c7a2800)
        #expect(JournalCursor.realtime(of: "garbage") == nil)
        #expect(JournalCursor.realtime(of: "s=a2;t=zz") == nil)
    }
}

@Suite("Journal export format, as a receiver reads it")
struct JournalExportDecoderTests {
    @Test("text and binary-safe fields, several entries, and a cut body counted as malformed")
    func decode() {
        var body = Array("__REALTIME_TIMESTAMP=1795255200000000\nMESSAGE=hello\nPRIORITY=3\n\n".utf8)
        body += Array("MESSAGE\n".utf8) + [5, 0, 0, 0, 0, 0, 0, 0] + Array("a\nb\u{0}c".utf8).prefix(5) + [0x0A]
        body += Array("_HOSTNAME=h\n\n".utf8)
        let (entries, malformed) = JournalExportDecoder.entries(in: body)
        #expect(malformed == 0 && entries.count == 2)
        #expect(entries[1]["MESSAGE"] == Array("a\nb\u{0}c".utf8).prefix(5).map { $0 })
        let record = JournalExportDecoder.record(from: entries[0])
        #expect(record.message == "hello" && record.severity == .error)
        #expect(record.timestamp == Timestamp(microsecondsSinceEpoch: 1_795_255_200_000_000))

        let cut = JournalExportDecoder.entries(in: Array("MESSAGE\n".utf8) + [200, 0, 0, 0, 0, 0, 0, 0, 1, 2])
        #expect(cut.malformed == 1 && cut.entries.isEmpty)
    }
}
