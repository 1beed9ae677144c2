import NIOCore
import NIOPosix
import Testing

import LogShipTestKit
@testable import LogShip

/// How requests in flight are spread over the upload loops, and that each goes out on its own loop's connection.
@Suite("Upload loops")
struct UploadLoopsTests {
    @Test("an operation takes the loop with the fewest operations, the first when tied; a release makes a loop free")
    func leastBusy() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let loops = UploadLoops(Array(group.makeIterator()))
        let (first, second) = (loops.executors[0], loops.executors[1])

        let taken = (0..<4).map { _ in loops.take() }
        #expect(taken.map { $0 === first } == [true, false, true, false], "taken in turn: 1–0, 1–1, 2–1, 2–2")
        loops.release(second)
        #expect(loops.take() === second, "2–1 after the release: the second loop is the less busy")
        loops.release(first)
        loops.release(first)
        #expect(loops.take() === first, "0–2")
    }

    @Test("with two loops, a request goes out on the connection of the loop its delivery task runs on")
    func connectionPerLoop() async throws {
        let receiver = try await TestReceiver()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = UploadLoops(Array(group.makeIterator()))
        let uploader = try HTTPUploader(configuration: .init(url: receiver.url), eventLoops: loops.eventLoops)
        var connections: [Int] = []
        let (first, second) = (loops.executors[0], loops.executors[1])
        for (index, executor) in [first, first, second, second].enumerated() {
            let line = UploadClientTests.line("m\(index)")
            try await Task(executorPreference: executor) {
                try await uploader.upload(Payload(lines: [line[...]], batchNumber: index))
            }.value
            connections.append(receiver.receiver.statistics.connections)
        }
        uploader.shutdown()
        try await group.shutdownGracefully()

        #expect(receiver.records.map(\.message) == ["m0", "m1", "m2", "m3"])
        // One client for every request would keep one connection ([1, 1, 1, 1]); taking turns, [1, 2, 2, 2].
        #expect(connections == [1, 1, 2, 2], "each loop's requests share that loop's kept-alive connection")
    }
}
