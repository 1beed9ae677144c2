import Testing

@testable import LogShipRecord

/// The kernel's crash reports read from their text, without a journal.
@Suite("Kernel crash reports")
struct KernelCrashReportTests {
    @Test("each form the kernel prints is recognised with its reason and victim", arguments: KernelLine.all)
    func recognised(_ line: KernelLine) throws {
        let report = try #require(KernelCrashReport(message: line.message))
        #expect(report.reason.rawValue == line.reason)
        #expect(report.pid.map { String($0) } == line.pid)
        #expect(report.comm == line.comm)
        #expect(report.unit == line.unit)
    }

    @Test("a line that quotes the words elsewhere than the kernel puts them is no report")
    func quoted() {
        for message in [
            "EXT4-fs error (device sda1): ext4_lookup:1851: inode #2: comm w[4243]: segfault at 0",
            "usb 1-1: port 2: worker[4243]: segfault at 0 ip 0 sp 0 error 4",
            "usb 1-1: reset: 0000 [#1] done",
            "a-name-of-24-bytes-long[4243]: segfault at 0 ip 0 sp 0 error 4",
            "worker[]: segfault at 0",
            "worker[4243] segfault at 0",
            "traps: worker[4243] trap divide error without an address",
            "traps: Missing ENDBR: 0xffffffffc0a1b000",
            "note: Oops: 0002 [#1] SMP",
            "Out of memory and swap: ok",
            "hog invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
            "WARNING: CPU: 1 PID: 4243 at kernel/workqueue.c:3182 __flush_work+0x2f/0x40",
            "",
        ] {
            #expect(KernelCrashReport(message: message) == nil, "\(message)")
        }
    }

    @Test("a crash line cut short by max_field_bytes keeps its reason and what was before the cut")
    func cut() {
        #expect(
            KernelCrashReport(message: "worker[4243]: segfault at 0 ip 000055")
                == KernelCrashReport(reason: .segfault, pid: 4243, comm: "worker"))
        #expect(
            KernelCrashReport(message: "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0")
                == KernelCrashReport(reason: .oomKill))
        #expect(
            KernelCrashReport(message: "Out of memory: Killed process 42")
                == KernelCrashReport(reason: .oomKill, pid: 42))
    }

    @Test("a pid that is no pid is left out; the report stays")
    func badPid() {
        #expect(
            KernelCrashReport(message: "Out of memory: Killed process 99999999999 (hog) total-vm:1kB")
                == KernelCrashReport(reason: .oomKill, comm: "hog"))
        #expect(
            KernelCrashReport(message: "worker[0]: segfault at 0 ip 0") == nil,
            "pid 0 is the idle task, never a victim")
    }

    @Test("a cgroup path's unit is its first component below the slices, if that holds processes")
    func unitOfControlGroup() {
        let cases: [(String, String?)] = [
            ("/system.slice/hog.service", "hog.service"),
            ("/system.slice/docker.service/a9f3", "docker.service"),
            ("/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service"),
            ("/user.slice/user-1000.slice/session-3.scope", "session-3.scope"),
            ("/user.slice/user-1000.slice/user@1000.service/app.slice/x.service", "user@1000.service"),
            ("/init.scope", "init.scope"),
            ("/", nil),
            ("/system.slice", nil),
            ("/lxc/web", nil),
        ]
        for (path, unit) in cases {
            #expect(ControlGroupPath.unit(of: Array(path.utf8)) == unit, "\(path)")
        }
    }
}

/// Which journal entries are crash reports: journald's fields decide, never the sender's words.
@Suite("Crash evidence")
struct CrashEvidenceTests {
    func entry(_ fields: [String: String]) -> JournalEntry {
        JournalEntry(realtime: 1, fields: fields.mapValues { Array($0.utf8) })
    }

    static let coredump = [
        "MESSAGE": "Process 4711 (worker) of user 0 dumped core.", "MESSAGE_ID": CrashEvidence.coredumpMessageID,
        "COREDUMP_PID": "4711", "COREDUMP_COMM": "worker", "COREDUMP_UNIT": "worker.service",
    ]

    @Test("systemd-coredump's entry: sent by systemd-coredump as root, or from its own service")
    func coredump() {
        let trusted: [[String: String]] = [
            ["_UID": "0", "_COMM": "systemd-coredum"],
            ["_UID": "0", "_EXE": "/usr/lib/systemd/systemd-coredump"],
            ["_UID": "998", "_COMM": "systemd-coredum", "_SYSTEMD_UNIT": "systemd-coredump@0-4712-0.service"],
            [
                "_UID": "1000", "_EXE": "/lib/systemd/systemd-coredump",
                "_SYSTEMD_UNIT": "systemd-coredump@3-99-0.service",
            ],
        ]
        let untrusted: [[String: String]] = [
            [:],
            ["_UID": "0"],
            ["_UID": "0", "_COMM": "systemd-coredump", "_EXE": "/usr/bin/python3"],
            ["_UID": "0", "_EXE": "/usr/lib/systemd/systemd-coredump-helper"],
            ["_UID": "1000", "_COMM": "systemd-coredum", "_SYSTEMD_UNIT": "user@1000.service"],
            ["_UID": "1000", "_EXE": "/usr/lib/systemd/systemd-coredump", "_SYSTEMD_UNIT": "session-3.scope"],
            ["_UID": "1000", "_COMM": "logger", "_SYSTEMD_UNIT": "systemd-coredump@0-4712-0.service"],
            // The sender's own words for what journald records.
            ["UID": "0", "COMM": "systemd-coredum", "SYSTEMD_UNIT": "systemd-coredump@0-1-0.service"],
        ]
        for sender in trusted {
            #expect(
                CrashEvidence(entry(Self.coredump.merging(sender) { $1 }))
                    == CrashEvidence(
                        source: .coredump, reason: "core-dump", pid: 4711, comm: "worker", unit: "worker.service"),
                "\(sender)")
        }
        for sender in untrusted {
            #expect(CrashEvidence(entry(Self.coredump.merging(sender) { $1 })) == nil, "\(sender)")
        }
    }

    @Test("a kernel report needs _TRANSPORT=kernel; PID 1's failure needs _PID=1 and _UID=0")
    func transports() {
        let segfault = "worker[4243]: segfault at 0 ip 0 sp 0 error 4"
        #expect(
            CrashEvidence(entry(["MESSAGE": segfault, "_TRANSPORT": "kernel"]))
                == CrashEvidence(source: .kernel, reason: "segfault", pid: 4243, comm: "worker"))
        for transport in ["syslog", "journal", "stdout", "audit", "driver", "Kernel"] {
            #expect(CrashEvidence(entry(["MESSAGE": segfault, "_TRANSPORT": transport])) == nil, "\(transport)")
        }
        #expect(CrashEvidence(entry(["MESSAGE": segfault, "TRANSPORT": "kernel"])) == nil)

        let failure = ["UNIT": "worker.service", "UNIT_RESULT": "signal"]
        #expect(
            CrashEvidence(entry(failure.merging(["_PID": "1", "_UID": "0"]) { $1 }))
                == CrashEvidence(source: .serviceManager, reason: "signal", unit: "worker.service"))
        #expect(CrashEvidence(entry(failure.merging(["_PID": "1", "_UID": "1000"]) { $1 })) == nil)
        #expect(CrashEvidence(entry(failure.merging(["_PID": "2", "_UID": "0"]) { $1 })) == nil)
        #expect(CrashEvidence(entry(failure.merging(["PID": "1", "UID": "0"]) { $1 })) == nil)
        #expect(CrashEvidence(entry(["_PID": "1", "_UID": "0", "UNIT": "", "UNIT_RESULT": "signal"])) == nil)
    }
}
