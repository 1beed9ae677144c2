import Dispatch
import Foundation
import LogShip
import Testing

import LogShipTestKit
@testable import LogShip

/// Floods and connection storms: the daemon stays up, bounded, and keeps serving everyone else.
@Suite("Intake under floods", .serialized)
struct IntakeLimitsTests {
    @Test("the limiter caps connections in all and per user, and reports refusals at most once per interval")
    func limiter() {
        let start = ContinuousClock.now
        var limiter = ConnectionLimiter(maximum: 3, maximumPerUser: 2, reportInterval: .seconds(10))
        #expect(limiter.admit(uid: 1000, now: start) == .accept)
        #expect(limiter.admit(uid: 1000, now: start) == .accept)
        #expect(limiter.admit(uid: 1000, now: start) == .refuse(report: 1), "a third from one user, whatever its process")
        #expect(limiter.admit(uid: 1001, now: start) == .accept, "another user still gets in")
        #expect(limiter.admit(uid: 1002, now: start + .seconds(1)) == .refuse(report: nil), "full; reported already")
        #expect(limiter.admit(uid: 1002, now: start + .seconds(2)) == .refuse(report: nil))
        #expect(limiter.admit(uid: 1002, now: start + .seconds(11)) == .refuse(report: 3), "the count since the last report")
        limiter.release(uid: 1000)
        #expect(limiter.open == 2)
        #expect(limiter.admit(uid: 1002, now: start + .seconds(12)) == .accept, "a closed connection frees its place")
        limiter.release(uid: 9)
        #expect(limiter.open == 3, "releasing an unknown user changes nothing")
    }

    @Test("on the control socket, operators keep places no other user can take, and may hold that many more")
    func operatorReserve() {
        let now = ContinuousClock.now
        var limiter = ConnectionLimiter(maximum: 10, maximumPerUser: 4, operatorReserve: 2, operators: [0, 999])
        let others = (1000..<1003).flatMap { uid in (0..<4).map { _ in limiter.admit(uid: UInt32(uid), now: now) } }
        #expect(others.count { $0 == .accept } == 8, "other users fill all but the operators' two places")
        #expect(limiter.admit(uid: 1003, now: now) != .accept)
        #expect(limiter.admit(uid: 0, now: now) == .accept && limiter.admit(uid: 999, now: now) == .accept)
        #expect(limiter.admit(uid: 0, now: now) != .accept, "the global cap holds for operators too")
        var own = ConnectionLimiter(maximum: 100, maximumPerUser: 4, operatorReserve: 2, operators: [0])
        #expect((0..<8).count { _ in own.admit(uid: 0, now: now) == .accept } == 6, "per-user cap plus the reserve")
    }

    @Test(
        "5 000 idle connections from one user: beyond the caps they are closed, another user's logger still gets through, other users fill the global cap and no more, descriptors stay bounded",
        .enabled(if: LocalUserTests.canSwitchUser))
    func connectionStorm() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        chmod(directory, 0o755)
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url,
            ingest: ["max_connections: 64", "max_connections_per_user: 48", "socket_mode: \"0666\""], spool: "memory")
        let daemon = try await LogshipdProcess.start(directory: directory)
        let descriptorsAtStart = try Self.openDescriptors(of: daemon.pid)

        // This process needs a descriptor per connection it holds.
        // (Only for this test: a high limit slows every process this one spawns, which closes them all.)
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let previous = limit
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        defer {
            var restored = previous
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restored)
        }
        let storm = min(5_000, Int(limit.rlim_max) - 500)
        let streamPath = "\(directory)/ingest.sock"
        let clients = try await offloaded { try (0..<storm).map { _ in try UnixClient(path: streamPath, type: .stream) } }

        // Every connection is either served or closed by the daemon: all but 48 are closed.
        try await eventually(within: .seconds(60)) { UnixClient.closedByPeer(clients) == storm - 48 }
        #expect(UnixClient.closedByPeer(clients) == storm - 48, "one user holds at most 48 connections")
        let descriptors = try Self.openDescriptors(of: daemon.pid)
        #expect(descriptors <= descriptorsAtStart + 64, "\(descriptors) descriptors, \(descriptorsAtStart) at start")

        let logger = try await LocalUserTests.asNobody(["/usr/bin/logger", "-u", streamPath, "-T", "from another process"])
        #expect(logger.status == 0, "\(logger.standardError)")
        try await receiver.waitFor(records: 1, within: .seconds(60))
        #expect(receiver.records.map(\.message) == ["from another process"])
        // logger's connection counts against the global cap until the daemon has seen it end, which its record
        // arriving does not prove. Once it is closed the daemon holds the storm's 48 and, at most, the upload's.
        try await eventually(within: .seconds(60)) { try Self.openDescriptors(of: daemon.pid) <= descriptors + 1 }

        // Twenty more users, one idle connection each: 16 fill the global cap of 64, the other 4 are closed.
        let beforeHolders = try Self.openDescriptors(of: daemon.pid)
        let holders = try (0..<20).map { user in
            try ChildProcess(
                "/usr/bin/setpriv",
                ["--reuid=\(20_000 + user)", "--regid=\(20_000 + user)", "--clear-groups",
                 "/usr/bin/socat", "-u", "UNIX-CONNECT:\(streamPath)", "/dev/null"])
        }
        defer { for holder in holders { holder.signal(SIGKILL) } }
        // A refused connection is open for a moment in the daemon; its holder exits once it is closed. With the
        // four refused ones gone, what the daemon holds is what it serves.
        try await eventually(within: .seconds(60)) { holders.count { !$0.isRunning } == 4 }
        #expect(holders.count { !$0.isRunning } == 4, "four users beyond the global cap were closed")
        try await eventually(within: .seconds(60)) { try Self.openDescriptors(of: daemon.pid) == beforeHolders + 16 }
        #expect(try Self.openDescriptors(of: daemon.pid) == beforeHolders + 16, "the global cap holds at 64")

        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait(within: .seconds(60))
        // A crash report starts with what crashed and ends with the registers: keep both ends.
        #expect(stopped.status == 0, "\(stopped.standardError.prefix(3000))\n…\n\(stopped.standardError.suffix(1000))")
        #expect(stopped.standardError.contains("connection limit reached"))
        _ = clients
    }

    @Test("8 writers flood the datagram socket for 10 s: the daemon stays up and the stream socket keeps serving")
    func datagramFlood() async throws {
        let daemon = try await TestDaemon.start(receiver: .init(delay: .milliseconds(50))) {
            $0.batch.maxRecords = 100
            $0.spool.maxBytes = 8 << 20
        }
        let datagramPath = daemon.datagramPath
        let flood = Task {
            await onThreads(8) { writer in
                guard let client = try? UnixClient(path: datagramPath, type: .datagram) else { return 0 }
                client.setSendTimeout(.seconds(1))
                let ends = ContinuousClock.now + .seconds(10)
                var sent = 0
                while ContinuousClock.now < ends {
                    if (try? client.write("<14>flood \(writer) \(sent)")) != nil { sent += 1 }
                }
                return sent
            }
        }
        // While the flood runs, an urgent line on the stream socket goes through.
        try await daemon.ingest(["<2>during the flood"])
        try await daemon.receiver.waitUntil(within: .seconds(60)) { requests in
            requests.contains { $0.records.contains { $0.message == "during the flood" } }
        }
        let sent = await flood.value.reduce(0, +)

        try await daemon.ingest(["<2>after the flood"])
        try await offloaded { try UnixClient(path: datagramPath, type: .datagram).write("<2>datagram after the flood") }
        try await daemon.receiver.waitUntil(within: .seconds(60)) { requests in
            let messages = Set(requests.flatMap(\.records).map(\.message))
            return messages.contains("after the flood") && messages.contains("datagram after the flood")
        }
        let status = try await daemon.status()
        print("datagram flood: \(sent) datagrams in 10 s; \(status.received) received, \(status.evicted) evicted")
        #expect(status.received > 0)
        try await daemon.stop()
    }

    private static func openDescriptors(of pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }
}

/// Runs `body` on `count` threads of their own at once (blocking writers) and collects what each returns.
func onThreads<Result: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> Result) async -> [Result] {
    await withTaskGroup(of: Result.self) { group in
        for index in 0..<count {
            group.addTask {
                await withCheckedContinuation { continuation in
                    Thread.detachNewThread { continuation.resume(returning: body(index)) }
                }
            }
        }
        return await group.reduce(into: []) { $0.append($1) }
    }
}
