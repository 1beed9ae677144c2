import NIOCore
import NIOPosix
import Testing

import LogShipTestKit
@testable import LogShip

/// How requests in flight are spread over the upload loops, and that each goes out on its own loop's connection.
@Suite("Upload loops")
struct UploadLoopsTests {
    @Test(
        "an operation takes the lane with the fewest operations, the first when tied; giving one back makes a lane free"
    )
    func leastBusy() async throws {
        let group = await startedEventLoopGroup(threads: 2)
        let loops = UploadLoops(Array(group.makeIterator()))

        let taken = (0..<4).map { _ in loops.take() }
        #expect(taken.map(\.index) == [0, 1, 0, 1], "taken in turn: 1–0, 1–1, 2–1, 2–2")
        #expect(taken.allSatisfy { $0.executor === loops.executors[$0.index] }, "a lane runs on its own loop")
        loops.giveBack(taken[1])
        #expect(loops.take().index == 1, "2–1 after it was given back: the second lane is the less busy")
        loops.giveBack(taken[0])
        loops.giveBack(taken[2])
        #expect(loops.take().index == 0, "0–2")
        // Not syncShutdownGracefully, which blocks this thread, one of the cooperative pool's, until the loops end.
        try await group.shutdownGracefully()
    }

    @Test("with two loops, a request goes out on the connection of the lane its payload names, from any thread")
    func connectionPerLane() async throws {
        let receiver = try await TestReceiver()
        let group = await startedEventLoopGroup(threads: 2)
        let loops = UploadLoops(Array(group.makeIterator()))
        // Not the default 10 s: a loaded machine can answer later than that (see UploadClientTests).
        let uploader = try HTTPUploader(
            configuration: .init(url: receiver.url, timeout: .seconds(120)), eventLoops: loops.eventLoops)
        var connections: [Int] = []
        for (index, lane) in [0, 0, 1, 1, 0].enumerated() {
            let line = UploadClientTests.line("m\(index)")
            // Sent from the cooperative pool, on no upload loop: the lane alone decides the connection.
            _ = try await uploader.upload(Payload(lines: [line[...]], batchNumber: index, lane: lane))
            connections.append(receiver.receiver.statistics.connections)
        }
        uploader.shutdown()
        try await group.shutdownGracefully()

        #expect(receiver.records.map(\.message) == ["m0", "m1", "m2", "m3", "m4"])
        // One client for every request would keep one connection ([1, 1, 1, 1, 1]); by lane, [1, 1, 2, 2, 2].
        #expect(connections == [1, 1, 2, 2, 2], "each lane's requests share that lane's kept-alive connection")
    }
}
