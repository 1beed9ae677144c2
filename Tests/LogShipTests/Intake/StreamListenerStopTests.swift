import Foundation
import LogShipTestKit
import Logging
import NIOPosix
import Synchronization
import Testing

@testable import LogShip

/// What a stream socket's stop does to the connections it serves.
@Suite("Stream listener stop")
struct StreamListenerStopTests {
    @Test("""
        a stop shuts a busy connection's input and reads what its socket holds to the end: every line its writer was \
        told was written is handed on
        """)
    func stopReadsWhatTheSocketHolds() async throws {
        let directory = try TemporaryDirectory.make()
        let path = "\(directory)/ingest.sock"
        // A loop of its own: on NIO's singleton group (two threads here) the stop's timers waited behind other
        // tests' in-process daemons, in a CI run past this test's 60 s.
        let group = await startedEventLoopGroup()
        let listener = try UnixStreamListener.bind(
            path: path, mode: 0o600, maximumFrameBytes: 1024, limits: .init(maximum: 4, maximumPerUser: 4),
            group: group, logger: .test)
        // The handler takes nothing until the gate opens: what the writer sends meanwhile waits in the socket.
        let gate = Gate()
        let handedOn = Mutex<[String]>([])
        let serving = Task {
            try await listener.serve { connection, _ in
                try? await connection.executeThenClose { reads, _ in
                    for try await read in reads {
                        await gate.wait()
                        handedOn.withLock { $0 += read.frames.map { String(decoding: $0.bytes, as: UTF8.self) } }
                    }
                }
            }
        }

        let client = try UnixClient(path: path, type: .stream)
        _ = fcntl(client.descriptor, F_SETFL, fcntl(client.descriptor, F_GETFL) | O_NONBLOCK)
        var written: [String] = []
        /// Writes one line without waiting; `nil` when it went whole, else the errno (a partial line counts as
        /// not written: the rest is dropped, which a stop may cut).
        func writeLine() -> Int32? {
            let line = "line \(written.count) " + String(repeating: "x", count: 100) + "\n"
            let sent = Array(line.utf8).withUnsafeBytes {
                send(client.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent == line.utf8.count {
                written.append(String(line.dropLast()))
                return nil
            }
            return sent < 0 ? errno : EAGAIN
        }
        // Fill the socket until it takes no more: the daemon reads a little ahead, the rest waits in the kernel.
        while writeLine() == nil, written.count < 100_000 {}
        #expect(written.count < 100_000, "the socket never filled")
        #expect(written.count > 100, "too little was written to stand for a busy writer: \(written.count) lines")

        listener.close()
        // Once the stop has shut the connection's input, the writer's writes fail (EPIPE) instead of waiting.
        let deadline = ContinuousClock.now + .seconds(60)
        var failure = writeLine()
        while failure == nil || failure == EAGAIN || failure == EINTR {
            #expect(ContinuousClock.now < deadline, "the stop never shut the connection's input")
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(5))  // poll interval until the deadline
            failure = writeLine()
        }
        #expect(failure == EPIPE)
        gate.open()
        try await serving.value
        let received = handedOn.withLock { $0 }
        #expect(received.count == written.count, "\(written.count - received.count) of \(written.count) lines lost")
        #expect(received.elementsEqual(written), "the lines in the order written")
        try await group.shutdownGracefully()
    }
}
