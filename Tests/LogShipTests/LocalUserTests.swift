import Foundation
import LogShip
import LogShipTestKit
import Testing

/// What a local user can and cannot do to the daemon and to other users' records, tried as that user would.
@Suite("What a local user can and cannot do", .serialized)
struct LocalUserTests {
    /// Runs `arguments` as uid/gid 65534 (nobody), with no supplementary groups.
    static func asNobody(_ arguments: [String], stdin: Data? = nil) async throws -> ProcessResult {
        try await run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups"] + arguments, stdin: stdin)
    }

    static let canSwitchUser = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// Kibibytes of `field` (`VmRSS`, `VmHWM`) in `/proc/<pid>/status`.
    static func memory(_ field: String, of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("\(field):") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    @Test("2 MB of newlines on the stream socket store nothing, are counted as blank, and raise RSS by far less than 40 MiB")
    func newlineFlood() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url)
        let daemon = try await LogshipdProcess.start(directory: directory)
        // Idle, with one record delivered: the upload connection and its buffers exist.
        let stream = "\(directory)/ingest.sock"
        try await offloaded { try UnixClient(path: stream, type: .stream).write("before the newlines\n") }
        try await receiver.waitFor(records: 1)
        let idle = try Self.memory("VmRSS", of: daemon.pid)

        try await offloaded {
            let client = try UnixClient(path: stream, type: .stream)
            try client.write([UInt8](repeating: UInt8(ascii: "\n"), count: 2_000_000))
            try client.write("after the newlines\n")
        }
        try await receiver.waitFor(records: 2)
        let status = try await LogshipdProcess.status(directory: directory)
        let messages = receiver.records.map(\.message)
        #expect(messages.count == 2 && messages == ["before the newlines", "after the newlines"], "\(messages.count) records")
        #expect(status.blank == 2_000_000 && status.received == 2)
        #expect(status.pending.values.reduce(0, +) == 0 && status.evicted == 0)
        let peak = try Self.memory("VmHWM", of: daemon.pid)
        print("newline flood: idle \(idle / 1024) MiB, peak \(peak / 1024) MiB")
        #expect(peak - idle < 40 << 10, "peak RSS \(peak) KiB against \(idle) KiB idle")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test(
        "20 000 crash claims from nobody: its burst keeps the crash class, the rest arrive as marked errors, and root's crash report goes ahead of them",
        .enabled(if: canSwitchUser))
    func crashClaimFlood() async throws {
        // The receiver holds every request until root's record is accepted: the moment the test looks at is
        // "the flood in the spool", however fast this machine takes it in.
        let gate = Gate()
        defer { gate.open() }
        let daemon = try await TestDaemon.start(receiver: .init(hold: { _ in await gate.wait() })) {
            $0.ingest.socketMode = 0o666
            $0.upload.timeout = .seconds(600)
        }
        chmod(daemon.directory, 0o755)
        let claims = (0..<20_000).map { #"{"priority":"crash","message":"claim \#($0)"}"# + "\n" }.joined()
        let started = ContinuousClock.now
        let flood = try await Self.asNobody(
            ["/usr/bin/socat", "-u", "STDIN", "UNIX-CONNECT:\(daemon.streamPath)"], stdin: Data(claims.utf8))
        #expect(flood.status == 0, "\(flood.standardError)")
        try await eventually { try await daemon.status().received == 20_000 }
        let floodSeconds = (ContinuousClock.now - started).seconds

        let response = try await daemon.send([Submission(message: "root's crash", priority: "crash")])
        #expect(response.ok && response.demoted == nil, "root's claims are not counted")
        let claimedBeforeAcceptance = daemon.receiver.requests.compactMap(\.batch).max() ?? 0
        let maxInFlight = daemon.configuration.upload.maxInFlight
        gate.open()
        try await daemon.receiver.waitFor(records: 20_001, within: .seconds(120))

        let records = daemon.receiver.records.filter { $0.message.hasPrefix("claim ") }
        let kept = records.filter { $0.priority == .crash }
        let demoted = records.filter { $0.priority == .error }
        #expect(kept.count + demoted.count == 20_000 && Set(records.map(\.message)).count == 20_000, "none lost")
        // The burst of 100, and at most 10 a second regained while the flood came in.
        #expect(kept.count >= 100 && Double(kept.count) <= 100 + 10 * floodSeconds + 1, "\(kept.count) kept")
        #expect(demoted.allSatisfy { $0.fields["demoted_from"] == "crash" && $0.severity == .critical && $0.peer?.uid == 65534 })
        #expect(try await daemon.status().demoted == demoted.count)

        // Claim order: root's record is in a claim ahead of every demoted record not already claimed.
        let requests = daemon.receiver.requests.sorted { $0.batch! < $1.batch! }
        let carrier = try #require(requests.first { $0.records.contains { $0.message == "root's crash" } })
        let demotedAhead = requests
            .filter { $0.batch! > claimedBeforeAcceptance + maxInFlight && $0.batch! < carrier.batch! }
            .flatMap(\.records).filter { $0.priority == .error }
        #expect(demotedAhead.isEmpty, "\(demotedAhead.count) demoted records went ahead of root's crash report")
        try await daemon.stop()
    }
}
