import Foundation
import LogShip
import LogShipTestKit
import Testing

/// The spool's disk as a new user meets it: a filesystem smaller than `spool.min_free_disk`, a disk filled to its
/// last block. What logshipd acknowledges it keeps; what it cannot keep it refuses, saying why, or does not read.
@Suite("The spool's disk", .serialized, .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
struct SpoolDiskTests {
    /// An 8 MiB tmpfs at `directory/disk`, unmounted by `body`'s end.
    static func withSmallDisk(_ body: (_ directory: String, _ disk: String) async throws -> Void) async throws {
        let directory = try TemporaryDirectory.make()
        let disk = "\(directory)/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: false)
        try await mountTmpfs(size: "8m", on: disk)
        defer { _ = umount2(disk, Int32(MNT_DETACH)) }
        try await body(directory, disk)
    }

    /// `count` lines for the ingest stream of about 1.5 KiB each, base64 of random bytes: about as large on disk.
    static func lines(_ prefix: String, _ count: Int, severity: Int) -> String {
        (0..<count).map { index in
            var noise = [UInt8](repeating: 0, count: 1100)
            noise.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
            return "<\(severity)>\(prefix) \(index) \(Data(noise).base64EncodedString())\n"
        }.joined()
    }

    /// Waits until the status of the daemon in `directory` satisfies `condition`; a timeout shows the last status.
    static func waitForStatus(
        _ directory: String, _ condition: @escaping @Sendable (DaemonStatus) -> Bool
    ) async throws {
        do {
            try await eventually { condition(try await LogshipdProcess.status(directory: directory)) }
        } catch {
            throw WaitTimeout(
                description: "\(error); status: \(try await LogshipdProcess.status(directory: directory))")
        }
    }

    static func logctl(_ arguments: [String], _ directory: String, stdin: String? = nil) async throws -> ProcessResult {
        try await run(
            Binaries.logctl, arguments + ["--socket", "\(directory)/control.sock"], stdin: stdin.map { Data($0.utf8) })
    }

    @Test("""
        on a filesystem smaller than spool.min_free_disk: a warning at start with the numbers, what logctl send \
        acknowledges is kept, and status shows the disk
        """)
    func smallFilesystem() async throws {
        try await Self.withSmallDisk { directory, disk in
            let receiver = try await TestReceiver()
            let listener = try NotifySocketListener(directory: directory)
            try LogshipdProcess.configure(
                directory: directory, url: receiver.url, spool: "\(disk)/spool.db", spoolKeys: ["min_free_disk: 64MiB"])
            let daemon = try await LogshipdProcess.start(
                directory: directory, environment: ["NOTIFY_SOCKET": listener.path!])
            // Ended however the test ends: a daemon left running would hold the unmounted filesystem.
            defer { daemon.signal(SIGKILL) }
            #expect(try await Self.logctl(["pause"], directory).status == 0)
            let info = (0..<100).map { "info \($0)\n" }.joined()
            let errors = (0..<100).map { "error \($0)\n" }.joined()
            #expect(try await Self.logctl(["send"], directory, stdin: info).status == 0)
            #expect(try await Self.logctl(["send", "--priority", "error"], directory, stdin: errors).status == 0)
            let crash = try await Self.logctl(["send", "--priority", "crash", "segfault in worker 7"], directory)
            #expect(crash.status == 0, "\(crash.standardError)")
            let status = try await LogshipdProcess.status(directory: directory)
            #expect(status.pending["info"] == 100 && status.pending["error"] == 100 && status.pending["crash"] == 1)
            #expect(status.evicted == 0 && status.refused == 0)
            let warning = daemon.standardErrorSoFar.split(separator: "\n").first { $0.contains("spool.min_free_disk") }
            #expect(
                warning?.contains("8.0 MiB") == true && warning?.contains("2.0 MiB") == true,
                "\(daemon.standardErrorSoFar)")

            // The disk in plain sight: --json, the table, and the service manager's STATUS=.
            #expect(status.spoolDiskSize == 8 << 20 && status.spoolDiskMinimumFree == 2 << 20)
            #expect(status.spoolDiskMinimumFreeConfigured == 64 << 20 && status.spoolDiskFree ?? 0 > 0)
            let table = try await Self.logctl(["status"], directory).standardOutput
            let diskLine = table.split(separator: "\n").first { $0.hasPrefix("disk ") }
            #expect(diskLine?.contains("free of 8.0 MiB; the spool leaves 2.0 MiB free") == true, "\(table)")
            #expect(diskLine?.contains("spool.min_free_disk is 64 MiB, more than this filesystem can spare") == true)
            try await waitUntil { listener.assignments(of: "STATUS").contains { $0.value.contains("; disk ") } }

            #expect(try await Self.logctl(["resume"], directory).status == 0)
            try await receiver.waitFor(records: 201)
            daemon.signal(SIGTERM)
            #expect(try await daemon.wait().status == 0)
        }
    }

    @Test("""
        on a small filesystem of error records that another file fills: logctl send of an info record, which may evict \
        none of them, fails naming the disk; error and crash records evict older ones and are kept
        """)
    func fullDiskRefusesWithTheReason() async throws {
        try await Self.withSmallDisk { directory, disk in
            let receiver = try await TestReceiver()
            try LogshipdProcess.configure(
                directory: directory, url: receiver.url, spool: "\(disk)/spool.db", spoolKeys: ["min_free_disk: 64MiB"])
            let daemon = try await LogshipdProcess.start(directory: directory)
            // Ended however the test ends: a daemon left running would hold the unmounted filesystem.
            defer { daemon.signal(SIGKILL) }
            #expect(try await Self.logctl(["pause"], directory).status == 0)
            @Sendable func status() async throws -> DaemonStatus {
                try await LogshipdProcess.status(directory: directory)
            }

            // Error records until the disk is short: each send is kept, older error records give way.
            var sent = 0
            while try await status().evictedForDisk == 0 {
                try #require(sent < 20_000, "8 MiB never filled")
                let batch = try await Self.logctl(
                    ["send", "--priority", "error"], directory, stdin: Self.lines("error", 200, severity: 3))
                try #require(batch.status == 0, "\(batch.standardError)")
                sent += 200
            }
            #expect(try await status().refused == 0)
            // What the evictions left free, and what a checkpoint may give back, are taken by another file.
            try SQLiteSpoolTests.fillDisk(disk)

            let info = try await Self.logctl(["send", "an info record finds no room"], directory)
            #expect(info.status == 1)
            #expect(info.standardError.contains("the disk holding the spool has"), "\(info.standardError)")
            #expect(info.standardError.contains("spool.min_free_disk"), "\(info.standardError)")
            #expect(!info.standardError.contains("crash records"), "\(info.standardError)")
            let afterInfo = try await status()
            #expect(afterInfo.pending["info"] ?? 0 == 0 && afterInfo.refusedForDisk == 1, "\(afterInfo)")

            for priority in ["error", "crash"] {
                let kept = try await Self.logctl(["send", "--priority", priority, "kept \(priority)"], directory)
                #expect(kept.status == 0, "\(kept.standardError)")
            }
            #expect(try await status().pending["crash"] == 1)
            #expect(try await Self.logctl(["resume"], directory).status == 0)
            // "kept error" is the newest of the error records that filled the disk: it comes after all of them,
            // which on a loaded machine took longer than a minute.
            try await receiver.waitUntil(within: .seconds(300)) { requests in
                let messages = Set(requests.flatMap(\.records).map(\.message))
                return messages.contains("kept error") && messages.contains("kept crash")
            }
            #expect(!receiver.records.contains { $0.message == "an info record finds no room" })
            daemon.signal(SIGTERM)
            #expect(try await daemon.wait().status == 0)
        }
    }

    @Test("""
        on a disk full to the last block: crash records from logctl evict info records, no socket line is refused, and \
        each is delivered or counted evicted
        """)
    func fullDisk() async throws {
        try await Self.withSmallDisk { directory, disk in
            let receiver = try await TestReceiver()
            try LogshipdProcess.configure(
                directory: directory, url: receiver.url, spool: "\(disk)/spool.db", spoolKeys: ["min_free_disk: 0"])
            let daemon = try await LogshipdProcess.start(directory: directory)
            // Ended however the test ends: a daemon left running would hold the unmounted filesystem.
            defer { daemon.signal(SIGKILL) }
            #expect(try await Self.logctl(["pause"], directory).status == 0)
            @Sendable func status() async throws -> DaemonStatus {
                try await LogshipdProcess.status(directory: directory)
            }

            // Info lines until the spool evicts some for room: the disk holds no more.
            let stream = try UnixClient(path: "\(directory)/ingest.sock", type: .stream)
            var written = 0
            while try await status().evicted == 0 {
                try #require(written < 20_000, "8 MiB never filled")
                // Off the cooperative pool: a write into a socket the daemon stops reading blocks its thread.
                try await offloaded { try stream.write(Self.lines("info", 200, severity: 6)) }
                written += 200
                let sent = written
                try await Self.waitForStatus(directory) { $0.received == sent }
            }
            #expect(try await status().evictedForDisk > 0)
            try await waitUntil {
                daemon.standardErrorSoFar.contains("info record(s): the disk is below what the spool leaves free")
            }
            try SQLiteSpoolTests.fillDisk(disk)

            var refused: [String] = []
            for index in 0..<60 {
                let result = try await Self.logctl(["send", "--priority", "crash", "crash \(index)"], directory)
                if result.status != 0 { refused.append(result.standardError) }
            }
            #expect(refused.isEmpty, "\(refused.count) of 60 refused: \(refused.first ?? "")")

            // Lines go on arriving on the full disk: each is stored, or later evicted by the rules; none read from
            // the socket is refused, and every one is delivered or counted as evicted.
            try await offloaded { try stream.write(Self.lines("late", 300, severity: 6)) }
            let total = written + 300 + 60
            try await Self.waitForStatus(directory) { $0.received == total }
            #expect(try await Self.logctl(["resume"], directory).status == 0)
            try await Self.waitForStatus(directory) { $0.pending.values.reduce(0, +) + $0.claimed == 0 }
            let final = try await status()
            #expect(final.refused == 0 && final.delivered + final.evicted == total, "\(final)")
            #expect(Set(receiver.records.map(\.message).filter { $0.hasPrefix("crash ") }).count == 60)
            daemon.signal(SIGTERM)
            #expect(try await daemon.wait().status == 0)
        }
    }
}
