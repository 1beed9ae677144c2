import Foundation
import LogShipTestKit
import Testing

@testable import LogShip
@testable import LogShipClient

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

    /// A coredump as systemd-coredump logs it: journald's fields say the sender is systemd-coredump, as root.
    static let coredumpFields = [
        "MESSAGE": "Process 4711 (worker) of user 1000 dumped core.", "PRIORITY": "6",
        "MESSAGE_ID": CrashEvidence.coredumpMessageID, "_PID": "4712", "_UID": "0", "_GID": "0",
        "_COMM": "systemd-coredum", "_EXE": "/usr/lib/systemd/systemd-coredump",
        "_SYSTEMD_UNIT": "systemd-coredump@0-4712-0.service", "COREDUMP_UNIT": "worker.service",
        "COREDUMP_EXE": "/bin/w", "COREDUMP_PID": "4711", "COREDUMP_COMM": "worker",
    ]

    /// What any user can send with `logger --journald`: the same words, but journald's own fields say who sent it.
    static let spoofedCoredumpFields = [
        "MESSAGE": "Process 1 (sshd) of user 0 dumped core.", "PRIORITY": "6",
        "MESSAGE_ID": CrashEvidence.coredumpMessageID, "_PID": "5000", "_UID": "1000", "_GID": "1000",
        "_COMM": "logger", "_EXE": "/usr/bin/logger", "_SYSTEMD_UNIT": "session-3.scope",
        "COREDUMP_UNIT": "worker.service", "COREDUMP_EXE": "/usr/sbin/sshd", "COREDUMP_PID": "1",
    ]

    @Test("""
        a coredump from systemd-coredump as root is a crash whatever its PRIORITY, counts as the unit that crashed, \
        and carries COREDUMP_*
        """)
    func coredump() throws {
        let record = try #require(mapper.record(for: entry(Self.coredumpFields)))
        #expect(record.priority == .crash && record.fields["coredump_exe"] == "/bin/w")
        #expect(record.fields["crash_reason"] == "core-dump" && record.fields["crash_unit"] == "worker.service")
        #expect(record.fields["crash_pid"] == "4711" && record.fields["crash_comm"] == "worker")
        var onlyWorker = mapper
        onlyWorker.selection = .init(units: ["worker.service"], leastImportant: .error)
        #expect(
            onlyWorker.record(for: entry(Self.coredumpFields)) != nil,
            "selected by the unit that crashed, despite its priority")
        #expect(mapper.fieldsToRead(isCoredump: false).contains("COREDUMP_EXE") == false)
        #expect(!mapper.fieldsToRead(isCoredump: true).contains("COREDUMP"), "the core itself is never read")
    }

    @Test("""
        a coredump from systemd-coredump@.service after it took the crashing user's uid is a crash; _EXE alone vouches \
        as well as _COMM
        """)
    func coredumpAsTheCrashingUser() throws {
        // systemd-coredump drops to the crashing process's uid (or its own system user) before it logs.
        var fields = Self.coredumpFields
        fields["_UID"] = "1000"
        fields["_COMM"] = "worker-helper"
        let record = try #require(mapper.record(for: entry(fields)))
        #expect(record.priority == .crash && record.fields["crash_unit"] == "worker.service")
    }

    @Test("a coredump entry from uid 1000 is an ordinary record by its PRIORITY: no crash, no COREDUMP_* fields")
    func spoofedCoredump() throws {
        let record = try #require(mapper.record(for: entry(Self.spoofedCoredumpFields)))
        #expect(record.priority == .info && record.severity == .informational)
        #expect(record.fields["coredump_unit"] == nil && record.fields["coredump_exe"] == nil)
        #expect(record.fields["crash_reason"] == nil)
        #expect(record.peer == PeerCredentials(pid: 5000, uid: 1000, gid: 1000, comm: "logger"))

        // The real systemd-coredump binary run by the user (`--backtrace`): still the user's words, in the
        // user's session, whatever _COMM and _EXE say.
        var backtrace = Self.spoofedCoredumpFields
        backtrace["_COMM"] = "systemd-coredum"
        backtrace["_EXE"] = "/usr/lib/systemd/systemd-coredump"
        #expect(mapper.record(for: entry(backtrace))?.priority == .info)
        // A name alone is not root: a process may call itself anything.
        var renamed = Self.coredumpFields
        renamed["_UID"] = "1000"
        renamed["_SYSTEMD_UNIT"] = "user@1000.service"
        #expect(mapper.record(for: entry(renamed))?.priority == .info)
        // Root, but not systemd-coredump.
        var root = Self.spoofedCoredumpFields
        root["_UID"] = "0"
        #expect(mapper.record(for: entry(root))?.priority == .info)
    }

    @Test("a spoofed coredump's COREDUMP_UNIT selects nothing, and it does not escape min_priority")
    func spoofedCoredumpSelection() {
        var onlyWorker = mapper
        onlyWorker.selection = .init(units: ["worker.service"])
        #expect(onlyWorker.record(for: entry(Self.spoofedCoredumpFields)) == nil, "it is session-3.scope's")
        var important = mapper
        important.selection = .init(leastImportant: .error)
        #expect(important.record(for: entry(Self.spoofedCoredumpFields)) == nil, "info is below err")
        var fromExcluded = Self.spoofedCoredumpFields
        fromExcluded["_SYSTEMD_UNIT"] = "logshipd.service"
        #expect(mapper.record(for: entry(fromExcluded)) == nil, "logshipd's own entry stays excluded")
    }

    /// A kernel entry as journald stores one read from /dev/kmsg: no _PID, _UID or _COMM.
    func kernelEntry(_ message: String, priority: Int = 6) -> JournalEntry {
        entry([
            "MESSAGE": message, "PRIORITY": String(priority), "_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel",
            "SYSLOG_FACILITY": "0", "_HOSTNAME": "web1",
        ])
    }

    @Test(
        "kernel fault, Oops, BUG, panic and OOM-kill lines are crash reports with the victim's pid, comm and unit",
        arguments: KernelLine.all)
    func kernelCrash(_ line: KernelLine) throws {
        let record = try #require(mapper.record(for: kernelEntry(line.message, priority: line.priority)))
        #expect(record.priority == .crash)
        #expect(record.severity == Severity(rawValue: line.priority), "the kernel's severity is kept")
        #expect(record.fields["crash_reason"] == line.reason)
        #expect(record.fields["crash_pid"] == line.pid)
        #expect(record.fields["crash_comm"] == line.comm)
        #expect(record.fields["crash_unit"] == line.unit)
        #expect(record.message == line.message)
    }

    @Test(
        "the same text from syslog, from stdout, from a native sender or without _TRANSPORT is not a crash",
        arguments: KernelLine.all)
    func kernelTextFromSenders(_ line: KernelLine) {
        let senders: [[String: String]] = [
            ["_TRANSPORT": "syslog", "_UID": "1000", "_GID": "1000", "_PID": "77", "SYSLOG_IDENTIFIER": "kernel"],
            ["_TRANSPORT": "journal", "_UID": "1000", "_GID": "1000", "_PID": "77", "SYSLOG_IDENTIFIER": "kernel"],
            ["_TRANSPORT": "stdout", "_UID": "0", "_GID": "0", "_PID": "77", "_SYSTEMD_UNIT": "worker.service"],
            ["_UID": "1000", "_GID": "1000", "_PID": "77", "SYSLOG_FACILITY": "0"],
        ]
        for sender in senders {
            let fields = sender.merging(["MESSAGE": line.message, "PRIORITY": String(line.priority)]) { $1 }
            let record = mapper.record(for: entry(fields))
            #expect(record?.priority == PriorityClass(severity: Severity(rawValue: line.priority)!), "\(sender)")
            #expect(record?.fields["crash_reason"] == nil)
        }
    }

    @Test("kernel lines that report no crash stay ordinary records")
    func kernelChatter() {
        for message in [
            "worker invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
            "oom_reaper: reaped process 4244 (hog), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
            "EXT4-fs (sda1): mounted filesystem with ordered data mode. Quota mode: none.",
            "audit: type=1400 audit(1795255200.123:42): apparmor=\"DENIED\" operation=\"open\" segfault at",
            "traps: Missing ENDBR: 0xffffffffc0a1b000",
            "x[1] y: segfault at 0",
        ] {
            #expect(mapper.record(for: kernelEntry(message))?.priority == .info, "\(message)")
        }
    }

    /// The "Failed with result" entry of PID 1 (MESSAGE_ID d9b373ed…) for `result`.
    func unitFailure(
        _ result: String, pid: String = "1", uid: String = "0", unit: String = "worker.service"
    ) -> JournalEntry {
        entry([
            "MESSAGE": "\(unit): Failed with result '\(result)'.", "PRIORITY": "4", "_PID": pid, "_UID": uid,
            "_GID": uid, "_COMM": "systemd", "_EXE": "/usr/lib/systemd/systemd", "_SYSTEMD_UNIT": "init.scope",
            "_TRANSPORT": "journal",
            "MESSAGE_ID": "d9b373ed55a64feb8242e02dbe79a49c", "UNIT": unit, "UNIT_RESULT": result,
        ])
    }

    @Test(
        "PID 1's unit failures with result core-dump, signal or oom-kill are crash reports of the unit",
        arguments: ["core-dump", "signal", "oom-kill"])
    func unitCrash(_ result: String) throws {
        let record = try #require(mapper.record(for: unitFailure(result)))
        #expect(record.priority == .crash && record.severity == .warning)
        #expect(record.fields["crash_reason"] == result && record.fields["crash_unit"] == "worker.service")
        #expect(record.fields["systemd_unit"] == "init.scope")
    }

    @Test("other results, and the same fields from any process but PID 1 as root, are not crash reports")
    func unitFailureNotCrash() {
        #expect(mapper.record(for: unitFailure("exit-code"))?.priority == .warning)
        #expect(mapper.record(for: unitFailure("timeout"))?.priority == .warning)
        #expect(
            mapper.record(for: unitFailure("core-dump", pid: "1234", uid: "1000"))?.priority == .warning,
            "a user's manager or anyone")
        #expect(
            mapper.record(for: unitFailure("core-dump", pid: "1234", uid: "0"))?.priority == .warning,
            "root, but not PID 1")
    }

    @Test("units and exclude_units see a crash as the unit that crashed; min_priority never holds back a trusted crash")
    func crashSelection() {
        var selective = mapper
        selective.selection = .init(units: ["worker.service"], leastImportant: .error)
        #expect(selective.record(for: entry(Self.coredumpFields))?.priority == .crash)
        #expect(selective.record(for: unitFailure("signal"))?.priority == .crash, "UNIT, not init.scope")
        let oom = "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
            + "task_memcg=/system.slice/worker.service,task=worker,pid=4244,uid=0"
        #expect(selective.record(for: kernelEntry(oom))?.priority == .crash, "task_memcg's unit")
        #expect(
            selective.record(for: kernelEntry(KernelLine.segfault.message)) == nil,
            "no unit in the text: none of the units")
        #expect(selective.record(for: unitFailure("exit-code")) == nil, "not a crash: init.scope's, and a warning")

        var important = mapper
        important.selection = .init(leastImportant: .error)
        #expect(important.record(for: kernelEntry(KernelLine.segfault.message, priority: 6))?.priority == .crash)
        #expect(important.record(for: unitFailure("oom-kill"))?.priority == .crash)

        var excluding = mapper
        excluding.selection = .init(excludedUnits: ["worker.service"])
        #expect(excluding.record(for: entry(Self.coredumpFields)) == nil)
        #expect(excluding.record(for: unitFailure("core-dump")) == nil)
        #expect(excluding.record(for: kernelEntry(oom)) == nil)
        #expect(excluding.record(for: kernelEntry(KernelLine.segfault.message)) != nil)
    }

    @Test("the reader fetches what trust is decided by: _TRANSPORT, _EXE, UNIT and UNIT_RESULT; never COREDUMP")
    func fieldsToRead() {
        for isCoredump in [false, true] {
            let fields = Set(mapper.fieldsToRead(isCoredump: isCoredump))
            #expect(fields.isSuperset(
                of: ["_TRANSPORT", "_EXE", "_UID", "_PID", "_COMM", "_SYSTEMD_UNIT", "UNIT", "UNIT_RESULT"]))
            #expect(!fields.contains("COREDUMP"))
        }
        #expect(Set(mapper.fieldsToRead(isCoredump: true)).isSuperset(
            of: ["COREDUMP_UNIT", "COREDUMP_PID", "COREDUMP_COMM"]))
    }

    @Test("a sender's own CRASH_* field (via journal.fields) is kept as sender_crash_*, never as the host's")
    func senderCrashFields() throws {
        var carrying = mapper
        carrying.extraFields = ["CRASH_REASON", "CRASH_UNIT"]
        let ordinary = try #require(
            carrying.record(for: entry(["MESSAGE": "x", "CRASH_REASON": "segfault", "CRASH_UNIT": "sshd.service"])))
        #expect(
            ordinary.priority == .info && ordinary.fields["crash_reason"] == nil
                && ordinary.fields["crash_unit"] == nil)
        #expect(
            ordinary.fields["sender_crash_reason"] == "segfault"
                && ordinary.fields["sender_crash_unit"] == "sshd.service")
        var fields = Self.coredumpFields
        fields["CRASH_UNIT"] = "sshd.service"
        let crash = try #require(carrying.record(for: entry(fields)))
        #expect(crash.fields["crash_unit"] == "worker.service" && crash.fields["sender_crash_unit"] == "sshd.service")
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

/// A kernel log line reporting a crash, as real kernels print it, and what it says about the victim.
struct KernelLine: Sendable, CustomTestStringConvertible {
    var message: String
    var reason: String
    var pid: String? = nil
    var comm: String? = nil
    var unit: String? = nil
    var priority = 6

    var testDescription: String { reason + ": " + String(message.prefix(50)) }

    static let segfault = KernelLine(
        message: "worker[4243]: segfault at 0 ip 00005581a2b3c4d5 sp 00007ffd1e2f3a40 error 4 "
            + "in worker[5581a2b3b000+1000] likely on CPU 1 (core 1, socket 0)",
        reason: "segfault", pid: "4243", comm: "worker")

    static let all: [KernelLine] = [
        segfault,
        // A name may hold spaces, brackets and colons; the kernel cuts it at 15 bytes.
        KernelLine(
            message: "my [w]: o[12][4243]: segfault at 7f0000001000 ip 00007f12 sp 00007ffd error 6 "
                + "in libc.so.6[7f12+195000]",
            reason: "segfault", pid: "4243", comm: "my [w]: o[12]"),
        KernelLine(
            message: "traps: worker[4243] general protection fault ip:7f1e2d3c4b5a sp:7ffd1e2f3a40 error:0 "
                + "in libc.so.6[7f1e2d300000+195000]",
            reason: "general-protection", pid: "4243", comm: "worker"),
        // Kernels before 5.x said "general protection" without "fault".
        KernelLine(
            message: "traps: worker[4243] general protection ip:7f1e2d3c4b5a sp:7ffd1e2f3a40 error:0 "
                + "in libc-2.31.so[7f1e2d300000+178000]",
            reason: "general-protection", pid: "4243", comm: "worker"),
        KernelLine(
            message: "traps: worker[4243] trap divide error ip:5581a2b3c4d5 sp:7ffd1e2f3a40 error:0 "
                + "in worker[5581a2b3b000+1000]",
            reason: "divide-error", pid: "4243", comm: "worker"),
        // Swift's and Rust's traps (ud2).
        KernelLine(
            message: "traps: worker[4243] trap invalid opcode ip:5581a2b3c4d5 sp:7ffd1e2f3a40 error:0 "
                + "in worker[5581a2b3b000+1000]",
            reason: "invalid-opcode", pid: "4243", comm: "worker"),
        KernelLine(
            message: "traps: worker[4243] trap int3 ip:5581a2b3c4d5 sp:7ffd1e2f3a40 error:0 "
                + "in worker[5581a2b3b000+1000]",
            reason: "trap", pid: "4243", comm: "worker"),
        KernelLine(message: "Oops: 0002 [#1] PREEMPT SMP PTI", reason: "oops", priority: 4),
        KernelLine(
            message: "Oops: general protection fault, probably for non-canonical address 0xdead000000000122: "
                + "0000 [#1] PREEMPT SMP NOPTI",
            reason: "oops", priority: 4),
        KernelLine(message: "general protection fault: 0000 [#1] SMP PTI", reason: "oops", priority: 4),
        KernelLine(message: "invalid opcode: 0000 [#1] SMP NOPTI", reason: "oops", priority: 4),
        KernelLine(message: "Internal error: Oops: 0000000096000004 [#1] PREEMPT SMP", reason: "oops", priority: 0),
        KernelLine(
            message: "BUG: unable to handle page fault for address: ffffffffc0a1b000", reason: "bug", priority: 1),
        KernelLine(
            message: "BUG: unable to handle kernel NULL pointer dereference at 0000000000000008", reason: "bug",
            priority: 1),
        KernelLine(
            message: "BUG: kernel NULL pointer dereference, address: 0000000000000000", reason: "bug", priority: 1),
        KernelLine(message: "kernel BUG at mm/slub.c:305!", reason: "bug", priority: 4),
        KernelLine(message: "Kernel panic - not syncing: Fatal exception", reason: "panic", priority: 0),
        KernelLine(
            message: "Out of memory: Killed process 4244 (hog) total-vm:8405876kB, anon-rss:7916520kB, "
                + "file-rss:4kB, shmem-rss:0kB, UID:1000 pgtables:15544kB oom_score_adj:0",
            reason: "oom-kill", pid: "4244", comm: "hog", priority: 3),
        KernelLine(
            message: "Memory cgroup out of memory: Killed process 4244 (hog (v2)) total-vm:8405876kB, "
                + "anon-rss:7916520kB, file-rss:4kB, shmem-rss:0kB, UID:0 pgtables:15544kB oom_score_adj:0",
            reason: "oom-kill", pid: "4244", comm: "hog (v2)", priority: 3),
        KernelLine(
            message: "Killed process 4244 (hog) total-vm:8405876kB, anon-rss:7916520kB, file-rss:4kB, shmem-rss:0kB",
            reason: "oom-kill", pid: "4244", comm: "hog", priority: 3),
        KernelLine(
            message: "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
                + "task_memcg=/system.slice/hog.service,task=hog,pid=4244,uid=0",
            reason: "oom-kill", pid: "4244", comm: "hog", unit: "hog.service"),
        // A delegated service's own sub-cgroup, and a name with commas: the unit is the first one below the slices.
        KernelLine(
            message: "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
                + "oom_memcg=/user.slice/user-1000.slice/user@1000.service,"
                + "task_memcg=/user.slice/user-1000.slice/user@1000.service/app.slice/x.service,"
                + "task=a,pid=9,pid=4244,uid=1000",
            reason: "oom-kill", pid: "4244", comm: "a,pid=9", unit: "user@1000.service"),
    ]
}
