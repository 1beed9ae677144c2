import Foundation
import LogShip
import LogShipTestKit
import Testing

/// The journal input against real journal files, made by systemd-journal-remote from export format.
@Suite("Journal input, end to end", .serialized)
struct JournalTests {
    /// 2026-11-21T10:00:00Z, in microseconds.
    static let t0: UInt64 = 1_795_255_200_000_000

    /// A directory for journal files only: inotify watches all of it.
    static func journalDirectory() throws -> (JournalFiles, String) {
        let directory = try TemporaryDirectory.make()
        return (JournalFiles(directory: directory), directory)
    }

    /// An in-process daemon reading `directory` from its head.
    static func start(
        reading directory: String, receiver: TestReceiver, configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> TestDaemon {
        try await TestDaemon.start(receiver: receiver) {
            $0.journal.enabled = true
            $0.journal.directory = directory
            $0.journal.startAt = .head
            configure(&$0)
        }
    }

    @Test("""
        10 000 entries, logshipd killed with kill -9 halfway: after a restart none is missing, the only repeats are \
        batches in flight
        """)
    func killHalfway() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        try await journal.append(JournalFiles.entries(10_000, from: Self.t0) { "entry \($0)" })

        // Four requests are answered, later ones are held; the small spool fills, so the reader stops halfway
        // through the journal (back-pressure). The daemon dies once both slots hold a request and the answered
        // four are acknowledged: then exactly the held records are in flight, whatever this machine's speed.
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(hold: { sequence in
            if sequence >= 4 { await gate.wait() }
        }))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, upload: ["timeout: 10m"], spoolKeys: ["max_bytes: 1MiB"],
            journal: ["enabled: true", "directory: \(journalPath)", "start_at: head"])
        let first = try await LogshipdProcess.start(directory: directory)
        try await waitUntil(within: .seconds(180)) { first.standardErrorSoFar.contains("reading paused") }
        let heldAtKill = try await LogshipdProcess.waitUntilOnlyHeldClaimed(
            directory: directory, receiver: receiver, requests: 6, firstHeld: 4)
        first.signal(SIGKILL)
        _ = try await first.wait()
        let beforeRestart = receiver.records.count
        gate.open()

        let daemon = try await LogshipdProcess.start(directory: directory)
        let expected = Set((0..<10_000).map { "entry \($0)" })
        try await receiver.waitUntil(within: .seconds(300)) { requests in
            expected.isSubset(of: Set(requests.flatMap(\.records).map(\.message)))
        }
        let received = receiver.records.map(\.message)
        let duplicates = received.count - Set(received).count
        print(
            "journal kill -9: \(beforeRestart) records arrived before the kill, \(received.count) in all, "
                + "\(duplicates) duplicates")
        #expect(beforeRestart < 10_000, "the daemon died with entries left to read or deliver")
        #expect(duplicates == heldAtKill, "the only repeats are the records of the requests in flight")
        #expect(heldAtKill <= 2 * 500, "two batches in flight at most")
        #expect(receiver.records.allSatisfy { $0.source == .journal && $0.host == "journalhost" })
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("entries appended while following arrive, and so do those of a journal file that appears later")
    func following() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        try await journal.append(JournalFiles.entries(10, from: Self.t0) { "first \($0)" })
        let receiver = try await TestReceiver()
        let daemon = try await Self.start(reading: journalPath, receiver: receiver)
        try await receiver.waitFor(records: 10, within: .seconds(180))

        try await journal.append(JournalFiles.entries(10, from: Self.t0 + 100) { "appended \($0)" })
        try await receiver.waitFor(records: 20, within: .seconds(180))
        try await journal.append(JournalFiles.entries(10, from: Self.t0 + 200) { "new file \($0)" }, to: "rotated")
        try await receiver.waitFor(records: 30, within: .seconds(180))

        let messages = receiver.records.map(\.message)
        #expect(messages.count == 30)
        #expect(Set(messages) == Set((0..<10).flatMap { ["first \($0)", "appended \($0)", "new file \($0)"] }))
        try await daemon.stop()
    }

    @Test("""
        a coredump after 10 000 info entries overtakes 90% of them, as a crash with its COREDUMP_* fields and without \
        the core
        """)
    func coredump() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        var core = [UInt8](repeating: 0, count: 1 << 20)
        for index in core.indices { core[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
        let coredump = JournalFiles.Entry(bytes: [
            ("__REALTIME_TIMESTAMP", Array(String(Self.t0 + 20_000).utf8)),
            ("MESSAGE", Array(
                ("Process 4711 (worker) of user 1000 dumped core.\n\nStack trace of thread 4711:\n"
                    + "#0  0x00007f crash (libc.so.6 + 0x1)").utf8)),
            ("MESSAGE_ID", Array(JournalRecordMapperID.coredump.utf8)), ("PRIORITY", Array("2".utf8)),
            ("COREDUMP_EXE", Array("/usr/bin/worker".utf8)), ("COREDUMP_PID", Array("4711".utf8)),
            ("COREDUMP_SIGNAL_NAME", Array("SIGSEGV".utf8)), ("COREDUMP_UNIT", Array("worker.service".utf8)),
            ("COREDUMP_CMDLINE", Array("/usr/bin/worker --serve".utf8)),
            ("_SYSTEMD_UNIT", Array("systemd-coredump@0-1-0.service".utf8)),
        ] + JournalRecordMapperID.coredumpSender + [("COREDUMP", core)])
        try await journal.append(JournalFiles.entries(10_000, from: Self.t0) { "chatter \($0)" })

        // Requests are held until the crash record is in the spool: the moment to look at is "both slots busy
        // with chatter, the rest of it waiting", whatever this machine's speed. The coredump is written only once
        // that is so; written with the chatter, it could reach the spool before the second slot had claimed, and
        // be held in it.
        let gate = Gate()
        let receiver = try await TestReceiver(behavior: .init(hold: { _ in await gate.wait() }))
        let daemon = try await Self.start(reading: journalPath, receiver: receiver) {
            $0.batch.maxRecords = 100
            $0.upload.timeout = .seconds(600)
        }
        try await receiver.waitUntil(within: .seconds(180)) { $0.count == 2 }
        let held = receiver.records.count
        try await eventually(within: .seconds(180)) { try await daemon.status().pending["info"] == 10_000 - held }
        try await journal.append([coredump])
        try await eventually(within: .seconds(180)) { try await daemon.status().pending["crash"] == 1 }
        let pendingInfo = try await daemon.status().pending["info"] ?? 0
        gate.open()

        try await receiver.waitFor(records: 10_001, within: .seconds(180))
        let requests = receiver.requests.sorted { $0.batch! < $1.batch! }
        let carrier = try #require(requests.first { $0.records.contains { $0.priority == .crash } })
        let crash = try #require(carrier.records.first)
        let overtaken = requests.filter { $0.batch! > carrier.batch! }.reduce(0) { $0 + $1.records.count }
        #expect(Double(overtaken) >= 0.9 * Double(pendingInfo), "ahead of \(overtaken) of the \(pendingInfo) pending")
        #expect(pendingInfo >= 9_000, "all but the held batches were pending")
        #expect(crash.source == .journal && crash.severity == .critical)
        #expect(crash.message.hasPrefix("Process 4711 (worker) of user 1000 dumped core.\n\nStack trace"))
        #expect(crash.fields["coredump_exe"] == "/usr/bin/worker" && crash.fields["coredump_signal_name"] == "SIGSEGV")
        #expect(crash.fields["coredump_unit"] == "worker.service" && crash.fields["coredump_pid"] == "4711")
        #expect(crash.fields["coredump_cmdline"] == "/usr/bin/worker --serve")
        #expect(crash.fields["coredump"] == nil)
        #expect(crash.ndjsonLine.count < 2_048, "the record stays small: the core is never read")
        try await daemon.stop()
    }

    @Test("""
        only the host claims crash: a coredump entry from uid 1000 arrives as info, kernel segfault and OOM-kill lines \
        and PID 1's core-dump failure as crash with their victims
        """)
    func trustedCrashes() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        let segfault = "worker[4243]: segfault at 0 ip 00005581a2b3c4d5 sp 00007ffd1e2f3a40 error 4 "
            + "in worker[5581a2b3b000+1000] likely on CPU 1 (core 1, socket 0)"
        let outOfMemory = "Out of memory: Killed process 4244 (hog) total-vm:8405876kB, anon-rss:7916520kB, "
            + "file-rss:4kB, shmem-rss:0kB, UID:0 pgtables:15544kB oom_score_adj:0"
        let oomSummary = "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
            + "task_memcg=/system.slice/hog.service,task=hog,pid=4244,uid=0"
        let kernel = [
            ("_TRANSPORT", "kernel"), ("SYSLOG_IDENTIFIER", "kernel"), ("SYSLOG_FACILITY", "0"),
            ("_HOSTNAME", "journalhost"),
        ]
        func user(_ transport: String) -> [(String, String)] {
            [("_TRANSPORT", transport), ("_UID", "1000"), ("_GID", "1000"), ("_PID", "5000"), ("_COMM", "logger"),
             ("_SYSTEMD_UNIT", "session-3.scope"), ("_HOSTNAME", "journalhost")]
        }
        try await journal.append([
            JournalFiles.Entry([
                ("__REALTIME_TIMESTAMP", String(Self.t0)),
                ("MESSAGE", "spoofed: Process 1 (sshd) of user 0 dumped core."),
                ("PRIORITY", "6"), ("MESSAGE_ID", JournalRecordMapperID.coredump), ("COREDUMP_UNIT", "worker.service"),
                ("COREDUMP_EXE", "/usr/sbin/sshd"), ("COREDUMP_PID", "1"),
            ] + user("journal")),
            JournalFiles.Entry(
                [("__REALTIME_TIMESTAMP", String(Self.t0 + 1)), ("MESSAGE", segfault), ("PRIORITY", "6")] + kernel),
            JournalFiles.Entry(
                [("__REALTIME_TIMESTAMP", String(Self.t0 + 2)), ("MESSAGE", oomSummary), ("PRIORITY", "6")] + kernel),
            JournalFiles.Entry(
                [("__REALTIME_TIMESTAMP", String(Self.t0 + 3)), ("MESSAGE", outOfMemory), ("PRIORITY", "3")] + kernel),
            JournalFiles.Entry([
                ("__REALTIME_TIMESTAMP", String(Self.t0 + 4)), ("MESSAGE", "syslog: " + segfault), ("PRIORITY", "6"),
                ("SYSLOG_IDENTIFIER", "kernel"),
            ] + user("syslog")),
            JournalFiles.Entry([
                ("__REALTIME_TIMESTAMP", String(Self.t0 + 5)),
                ("MESSAGE", "worker.service: Failed with result 'core-dump'."),
                ("PRIORITY", "4"), ("MESSAGE_ID", "d9b373ed55a64feb8242e02dbe79a49c"), ("UNIT", "worker.service"),
                ("UNIT_RESULT", "core-dump"), ("_PID", "1"), ("_UID", "0"), ("_GID", "0"), ("_COMM", "systemd"),
                ("_EXE", "/usr/lib/systemd/systemd"), ("_SYSTEMD_UNIT", "init.scope"), ("_TRANSPORT", "journal"),
                ("_HOSTNAME", "journalhost"),
            ]),
        ])

        // Everything is shipped: what matters is the class each arrives in.
        let receiver = try await TestReceiver()
        let daemon = try await Self.start(reading: journalPath, receiver: receiver)
        try await receiver.waitFor(records: 6, within: .seconds(180))
        try await daemon.stop()
        let byMessage = Dictionary(uniqueKeysWithValues: receiver.records.map { ($0.message, $0) })
        let spoofed = try #require(byMessage["spoofed: Process 1 (sshd) of user 0 dumped core."])
        #expect(
            spoofed.priority == .info && spoofed.fields["coredump_unit"] == nil
                && spoofed.fields["crash_reason"] == nil)
        #expect(spoofed.peer?.uid == 1000)
        let segfaulted = try #require(byMessage[segfault])
        #expect(segfaulted.priority == .crash && segfaulted.severity == .informational)
        #expect(segfaulted.fields["crash_reason"] == "segfault" && segfaulted.fields["crash_pid"] == "4243")
        #expect(segfaulted.fields["crash_comm"] == "worker" && segfaulted.fields["crash_unit"] == nil)
        let summary = try #require(byMessage[oomSummary])
        #expect(summary.priority == .crash && summary.fields["crash_reason"] == "oom-kill")
        #expect(summary.fields["crash_unit"] == "hog.service" && summary.fields["crash_pid"] == "4244")
        let killed = try #require(byMessage[outOfMemory])
        #expect(killed.priority == .crash && killed.fields["crash_reason"] == "oom-kill")
        #expect(killed.fields["crash_pid"] == "4244" && killed.fields["crash_comm"] == "hog")
        let relayed = try #require(byMessage["syslog: " + segfault])
        #expect(relayed.priority == .info && relayed.fields["crash_reason"] == nil)
        let failed = try #require(byMessage["worker.service: Failed with result 'core-dump'."])
        #expect(failed.priority == .crash && failed.fields["crash_reason"] == "core-dump")
        #expect(failed.fields["crash_unit"] == "worker.service")

        // Selected by the unit that crashed, whatever their priority; the spoofed coredump's claim selects nothing.
        let selective = try await TestReceiver()
        let filtered = try await Self.start(reading: journalPath, receiver: selective) {
            $0.journal.units = ["worker.service", "hog.service"]
            $0.journal.minPriority = .error
        }
        try await eventually(within: .seconds(180)) { try await filtered.status().journal?.read == 6 }
        try await selective.waitFor(records: 2, within: .seconds(180))
        try await eventually { try await filtered.status().pending.values.reduce(0, +) == 0 }
        #expect(
            Set(selective.records.map(\.message)) == [oomSummary, "worker.service: Failed with result 'core-dump'."])
        try await filtered.stop()
    }

    @Test("a coredump's 48 MiB core is never read, even with a 16 MiB field limit: logshipd's peak memory barely moves")
    func coreNeverRead() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        try await journal.append(JournalFiles.entries(10, from: Self.t0) { "before \($0)" })
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        // A field limit this high would let a read of COREDUMP take 16 MiB: the check below would see it.
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url,
            journal: ["enabled: true", "directory: \(journalPath)", "start_at: head", "max_field_bytes: 16MiB"])
        let daemon = try await LogshipdProcess.start(directory: directory)
        try await receiver.waitFor(records: 10, within: .seconds(180))
        let before = try Self.peakMemory(of: daemon.pid)

        // Made off the cooperative pool: 48 million steps take this debug build about a second.
        let core = await offloaded {
            var core = [UInt8](repeating: 0, count: 48 << 20)
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for index in core.indices {
                state = state &* 6_364_136_223_846_793_005 &+ 1
                core[index] = UInt8(truncatingIfNeeded: state >> 56)
            }
            return core
        }
        try await journal.append([
            JournalFiles.Entry(bytes: [
                ("__REALTIME_TIMESTAMP", Array(String(Self.t0 + 100).utf8)),
                ("MESSAGE", Array("Process 7 (big) of user 0 dumped core.".utf8)),
                ("MESSAGE_ID", Array(JournalRecordMapperID.coredump.utf8)),
                ("COREDUMP_EXE", Array("/usr/bin/big".utf8)),
            ] + JournalRecordMapperID.coredumpSender + [("COREDUMP", core)])
        ])
        try await receiver.waitUntil(within: .seconds(180)) {
            $0.contains { $0.records.contains { $0.priority == .crash } }
        }
        let after = try Self.peakMemory(of: daemon.pid)
        print("journal coredump: peak memory \(before / 1024) MiB before the 48 MiB core, \(after / 1024) MiB after")
        #expect(after - before < 8 << 10, "peak memory grew by \((after - before) / 1024) MiB")
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    /// A process's peak resident memory (`VmHWM`), in KiB.
    static func peakMemory(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw WaitTimeout(description: "no VmHWM for \(pid)") }
        return kilobytes
    }

    @Test("a multi-line and a binary MESSAGE arrive whole and valid")
    func messages() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        let binary: [UInt8] = [0x00, 0x01, 0xFF, 0xFE, UInt8(ascii: "a"), 0x0A, UInt8(ascii: "b"), 0xC3]
        try await journal.append([
            JournalFiles.Entry([
                ("__REALTIME_TIMESTAMP", String(Self.t0)), ("MESSAGE", "first line\nsecond line\n\tindented"),
                ("PRIORITY", "3"),
            ]),
            JournalFiles.Entry(bytes: [
                ("__REALTIME_TIMESTAMP", Array(String(Self.t0 + 1).utf8)), ("MESSAGE", binary),
            ]),
        ])
        let receiver = try await TestReceiver()
        let daemon = try await Self.start(reading: journalPath, receiver: receiver)
        try await receiver.waitFor(records: 2, within: .seconds(180))
        // Two classes, two requests: in journal order by time.
        let records = receiver.records.sorted { $0.timestamp < $1.timestamp }
        #expect(receiver.requests.allSatisfy { $0.malformedLines == 0 }, "every line is valid JSON")
        #expect(
            records.map(\.message) == ["first line\nsecond line\n\tindented", String(decoding: binary, as: UTF8.self)])
        #expect(records[0].severity == .error && records[0].priority == .error)
        #expect(records[1].severity == .informational, "no PRIORITY is LOG_INFO, as journald stores it")
        #expect(records.allSatisfy { !$0.truncated })
        #expect(records[0].timestamp == Timestamp(microsecondsSinceEpoch: Int64(Self.t0)))
        try await daemon.stop()
    }

    @Test("a saved cursor that no longer exists: the reader resumes after its time and says so once")
    func lostCursor() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        try await journal.append(JournalFiles.entries(100, from: Self.t0) { "before \($0)" })
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url,
            journal: ["enabled: true", "directory: \(journalPath)", "start_at: head"])
        var daemon = try await LogshipdProcess.start(directory: directory)
        try await receiver.waitFor(records: 100, within: .seconds(180))
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
        let requestsBeforeRestart = receiver.requests.count

        // Another machine's journal in its place: the saved cursor (the entry at t0+99) does not exist in it.
        try FileManager.default.removeItem(atPath: "\(journalPath)/system.journal")
        try await journal.append(JournalFiles.entries(200, from: Self.t0) { "replaced \($0)" }, to: "other")
        daemon = try await LogshipdProcess.start(directory: directory)
        try await receiver.waitFor(records: 200, within: .seconds(180))
        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait()

        let resumed = receiver.recordsInClaimOrder(of: receiver.requests.dropFirst(requestsBeforeRestart))
            .map(\.message)
        #expect(resumed == (100..<200).map { "replaced \($0)" }, "the first entry after t0+99, and on")
        let warnings = stopped.standardError.split(separator: "\n")
            .filter { $0.contains("saved cursor's entry is gone") }
        #expect(warnings.count == 1, "\(stopped.standardError)")
    }

    @Test("journal.start_at: tail ships nothing old on a first start, head ships everything")
    func startPosition() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        try await journal.append(JournalFiles.entries(50, from: Self.t0) { "old \($0)" })

        let tailReceiver = try await TestReceiver()
        let tail = try await Self.start(reading: journalPath, receiver: tailReceiver) { $0.journal.startAt = .tail }
        try await eventually { try await tail.status().journal?.state == "following" }
        try await journal.append(JournalFiles.entries(5, from: Self.t0 + 100) { "new \($0)" })
        try await tailReceiver.waitFor(records: 5, within: .seconds(180))
        try await tail.stop()
        #expect(
            tailReceiver.recordsInClaimOrder(of: tailReceiver.requests).map(\.message) == (0..<5).map { "new \($0)" })

        let headReceiver = try await TestReceiver()
        let head = try await Self.start(reading: journalPath, receiver: headReceiver)
        try await headReceiver.waitFor(records: 55, within: .seconds(180))
        #expect(
            headReceiver.recordsInClaimOrder(of: headReceiver.requests).map(\.message)
                == (0..<50).map { "old \($0)" } + (0..<5).map { "new \($0)" })
        try await head.stop()
    }

    @Test("units, excluded units, min_priority and raw matches select exactly the expected entries")
    func selection() async throws {
        let (journal, journalPath) = try Self.journalDirectory()
        var entries: [JournalFiles.Entry] = []
        var time = Self.t0
        for unit in ["web.service", "db.service", "cron.service", "logshipd.service"] {
            for priority in [2, 4, 6, 7] {
                for host in ["a", "b"] {
                    time += 1
                    entries.append(JournalFiles.Entry([
                        ("__REALTIME_TIMESTAMP", String(time)), ("MESSAGE", "\(unit) \(priority) \(host)"),
                        ("PRIORITY", String(priority)), ("_SYSTEMD_UNIT", unit), ("_HOSTNAME", host),
                    ]))
                }
            }
        }
        try await journal.append(entries)

        struct Case {
            var configure: @Sendable (inout DaemonConfiguration.Journal) -> Void
            var expected: Set<String>
            /// Entries the raw matches let the reader see.
            var read = 32
        }
        let cases = [
            // Defaults: everything but logshipd's own unit.
            Case(configure: { _ in }, expected: Set(entries.indices.compactMap { index in
                let message = "\(["web.service", "db.service", "cron.service", "logshipd.service"][index / 8]) "
                    + "\([2, 4, 6, 7][index / 2 % 4]) \(["a", "b"][index % 2])"
                return message.hasPrefix("logshipd.service") ? nil : message
            })),
            Case(
                configure: {
                    $0.units = ["web.service", "db.service"]
                    $0.minPriority = .warning
                    $0.matches = ["_HOSTNAME=a"]
                },
                expected: ["web.service 2 a", "web.service 4 a", "db.service 2 a", "db.service 4 a"],
                read: 16),
            Case(
                configure: {
                    $0.excludeUnits = ["web.service", "cron.service"]
                    $0.minPriority = .error
                },
                expected: ["db.service 2 a", "db.service 2 b", "logshipd.service 2 a", "logshipd.service 2 b"]),
        ]
        for selection in cases {
            let receiver = try await TestReceiver()
            let daemon = try await Self.start(reading: journalPath, receiver: receiver) {
                selection.configure(&$0.journal)
            }
            // Read means committed with the cursor: what is left out is left out for good.
            try await eventually(within: .seconds(180)) { try await daemon.status().journal?.read == selection.read }
            try await receiver.waitFor(records: selection.expected.count, within: .seconds(180))
            try await eventually { try await daemon.status().pending.values.reduce(0, +) == 0 }
            #expect(Set(receiver.records.map(\.message)) == selection.expected)
            #expect(receiver.records.count == selection.expected.count)
            try await daemon.stop()
        }
    }
}

/// systemd-coredump's MESSAGE_ID, as the journal files the tests write carry it.
enum JournalRecordMapperID {
    static let coredump = "fc2e22bc6ee647b6b90729ab34a250b1"
    /// What journald records of systemd-coredump as the sender, which is what makes its entry a crash report.
    static let coredumpSender: [(String, [UInt8])] = [
        ("_UID", Array("0".utf8)), ("_GID", Array("0".utf8)), ("_PID", Array("4712".utf8)),
        ("_COMM", Array("systemd-coredum".utf8)), ("_EXE", Array("/usr/lib/systemd/systemd-coredump".utf8)),
        ("_TRANSPORT", Array("journal".utf8)),
    ]
}
