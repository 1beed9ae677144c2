import Dispatch
import Foundation
import LogShip
import Testing

import LogShipTestKit
@testable import LogShip

/// Floods and connection storms: the daemon stays up, bounded, and keeps serving everyone else.
@Suite("Intake under floods", .serialized)
struct IntakeLimitsTests {
    @Test("""
        the limiter serves up to the caps in all and per user, holds what is over a user's cap while it may, and \
        refuses the rest
        """)
    func limiter() {
        var limiter = ConnectionLimiter(maximum: 4, maximumPerUser: 2, maximumHeld: 1)
        #expect(limiter.admit(0, uid: 1000) == .serve)
        #expect(limiter.admit(1, uid: 1000) == .serve)
        #expect(limiter.admit(2, uid: 1000) == .hold, "a third from one user, whatever its process, waits unread")
        #expect(limiter.admit(3, uid: 1000) == .refuse(.userCap), "only one may wait")
        #expect(limiter.release(3) == nil)
        #expect(limiter.admit(4, uid: 1001) == .serve, "another user still gets in")
        #expect(limiter.admit(5, uid: 1002) == .serve)
        #expect(!limiter.hasRoom, "every place to serve is taken: nothing more is accepted")
        #expect(limiter.release(0) == 2, "a closed connection's place goes to its user's held one")
        #expect(limiter.role(of: 2) == .served && limiter.held == 0 && limiter.served == 4)
        #expect(limiter.release(5) == nil && limiter.hasRoom)
        #expect(limiter.admit(6, uid: 1000) == .hold)
        let expired = limiter.expire(6)
        #expect(expired, "the hold ran out")
        #expect(limiter.role(of: 6) == .refused)
        let expiredAgain = limiter.expire(6), servedExpired = limiter.expire(2)
        #expect(!expiredAgain && !servedExpired, "only a held connection expires")
        #expect(limiter.release(6) == nil && limiter.release(1) == nil)
        #expect(limiter.served == 2 && limiter.hasRoom)
        #expect(limiter.release(99) == nil, "releasing an unknown connection changes nothing")
        #expect(limiter.served == 2)
    }

    @Test("on the control socket, operators keep places no other user can take, and may hold that many more")
    func operatorReserve() {
        var limiter = ConnectionLimiter(maximum: 10, maximumPerUser: 4, operatorReserve: 2, operators: [0, 999])
        var id = 0
        func admit(_ uid: UInt32) -> ConnectionLimiter.Admission {
            defer { id += 1 }
            return limiter.admit(id, uid: uid)
        }
        let others = (1000..<1003).flatMap { uid in (0..<4).map { _ in admit(UInt32(uid)) } }
        #expect(others.count { $0 == .serve } == 8, "other users fill all but the operators' two places")
        for (index, admission) in others.enumerated() where admission != .serve { _ = limiter.release(index) }
        #expect(admit(1003) == .refuse(.connectionCap))
        _ = limiter.release(id - 1)
        #expect(admit(0) == .serve && admit(999) == .serve)
        #expect(admit(0) == .refuse(.connectionCap), "the global cap holds for operators too")
        var own = ConnectionLimiter(maximum: 100, maximumPerUser: 4, operatorReserve: 2, operators: [0])
        #expect((0..<8).count { own.admit($0, uid: 0) == .serve } == 6, "per-user cap plus the reserve")
    }

    @Test(
        "the descriptor budget keeps the configured caps where the limit allows them, and clamps them where it does not"
    )
    func descriptorBudget() {
        let configured = DescriptorBudget.Places(maximum: 1024, maximumPerUser: 256)
        let roomy = DescriptorBudget(limit: 65536, open: 40, headroom: 100, configured: configured, operatorReserve: 4)
        #expect(roomy.ingest == configured && roomy.control == configured && !roomy.isBelow(configured))
        let tight = DescriptorBudget(limit: 1024, open: 40, headroom: 100, configured: configured, operatorReserve: 4)
        #expect(tight.available == 884)
        #expect(tight.control.maximum == 110 && tight.ingest.maximum == 619 && tight.ingest.maximumPerUser == 256)
        #expect(tight.ingestHeld == 154)
        #expect(tight.ingest.maximum + tight.ingestHeld + tight.control.maximum <= 1024 - 40 - 100)
        #expect(tight.isBelow(configured))
        let starved = DescriptorBudget(limit: 128, open: 40, headroom: 100, configured: configured, operatorReserve: 4)
        #expect(starved.ingest.maximum == 1 && starved.control.maximum == 8, "each socket keeps a place or a few")
    }

    @Test(
        """
        5 000 idle connections from one user: beyond the caps they are held a while, then closed; another user's \
        logger still gets through, other users fill the global cap and the rest wait in the queue, descriptors stay \
        bounded
        """,
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
        let clients = try await offloaded {
            try (0..<storm).map { _ in try UnixClient(path: streamPath, type: .stream) }
        }

        // Every connection is either served or, once held for a while, closed by the daemon: all but 48 are closed.
        try await eventually(within: .seconds(300)) { UnixClient.closedByPeer(clients) == storm - 48 }
        #expect(UnixClient.closedByPeer(clients) == storm - 48, "one user holds at most 48 connections")
        let descriptors = try Self.openDescriptors(of: daemon.pid)
        #expect(descriptors <= descriptorsAtStart + 64, "\(descriptors) descriptors, \(descriptorsAtStart) at start")

        let logger = try await LocalUserTests.asNobody(
            ["/usr/bin/logger", "-u", streamPath, "-T", "from another process"])
        #expect(logger.status == 0, "\(logger.standardError)")
        try await receiver.waitFor(records: 1, within: .seconds(180))
        #expect(receiver.records.map(\.message) == ["from another process"])
        // logger's connection counts against the global cap until the daemon has seen it end, which its record
        // arriving does not prove. Once it is closed the daemon holds the storm's 48 and, at most, the upload's.
        try await eventually(within: .seconds(180)) { try Self.openDescriptors(of: daemon.pid) <= descriptors + 1 }

        // Twenty more users, one idle connection each: 16 fill the global cap of 64, the other 4 are not accepted.
        let beforeHolders = try Self.openDescriptors(of: daemon.pid)
        let holders = try (0..<20).map { user in
            try ChildProcess(
                "/usr/bin/setpriv",
                ["--reuid=\(20_000 + user)", "--regid=\(20_000 + user)", "--clear-groups",
                 "/usr/bin/socat", "-u", "UNIX-CONNECT:\(streamPath)", "/dev/null"])
        }
        defer { for holder in holders { holder.signal(SIGKILL) } }
        // The four beyond the cap wait in the kernel's queue, connected and unaccepted: nothing closes them.
        try await eventually(within: .seconds(300)) { try Self.openDescriptors(of: daemon.pid) == beforeHolders + 16 }
        let status = try await LogshipdProcess.status(directory: directory)
        #expect(try Self.openDescriptors(of: daemon.pid) == beforeHolders + 16, "the global cap holds at 64")
        let allRunning = holders.allSatisfy { $0.isRunning }
        #expect(allRunning, "no holder was closed")
        #expect(status.refusedConnections["user_cap", default: 0] == storm - 48, "\(status.refusedConnections)")

        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait(within: .seconds(180))
        // A crash report starts with what crashed and ends with the registers: keep both ends.
        #expect(
            stopped.status == 0, "\(stopped.standardError.prefix(3000))\n…\n\(stopped.standardError.suffix(1000))")
        #expect(stopped.standardError.contains("over ingest.max_connections_per_user"))
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
        try await daemon.receiver.waitUntil(within: .seconds(180)) { requests in
            requests.contains { $0.records.contains { $0.message == "during the flood" } }
        }
        let sent = await flood.value.reduce(0, +)

        try await daemon.ingest(["<2>after the flood"])
        try await offloaded { try UnixClient(path: datagramPath, type: .datagram).write("<2>datagram after the flood") }
        try await daemon.receiver.waitUntil(within: .seconds(180)) { requests in
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
            group.addTask { await offloaded { body(index) } }
        }
        return await group.reduce(into: []) { $0.append($1) }
    }
}
