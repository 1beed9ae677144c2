import Foundation
import LogShipTestKit
import Synchronization
import Testing

/// The test kit's child processes: what a test that throws leaves behind, and what a start waits for.
@Suite("Child processes")
struct ChildProcessTests {
    @Test("a child still running when its last reference goes is killed and reaped")
    func droppedChildIsKilled() async throws {
        var child: ChildProcess? = try ChildProcess("/bin/sleep", ["300"])
        let pid = try #require(child?.pid)
        #expect(child?.isRunning == true)
        child = nil
        // Reaped, a process leaves /proc; killed but not reaped, it stays there as a zombie.
        try await waitUntil { !FileManager.default.fileExists(atPath: "/proc/\(pid)") }
    }

    @Test(
        "a child inherits its three standard streams and nothing else: not the sockets NIO opens without close-on-exec"
    )
    func childInheritsOnlyItsStandardStreams() async throws {
        // NIO opens its sockets without close-on-exec. A receiver's listening socket inherited by a child (a
        // daemon, a fuzzer) stayed listening after the receiver stopped: a daemon's requests to it waited out
        // their timeout, and a receiver started again on its port could not bind it.
        let receiver = try await TestReceiver()
        let listed = try await run("/bin/sh", ["-c", "ls /proc/$$/fd"])
        await receiver.stop()
        #expect(listed.status == 0, "\(listed.standardError)")
        #expect(listed.standardOutput.split(separator: "\n") == ["0", "1", "2"])
    }

    /// Where a thread puts the child it started.
    private final class Started: Sendable {
        let child = Mutex<ChildProcess?>(nil)
    }

    @Test("a start returns before the child has read its input: 8 MiB to a child that reads none of it")
    func inputDoesNotHoldUpTheStart() async throws {
        // Started on a thread, so that a start that waited for the child to read would fail this wait, not hang
        // the test process.
        let started = Started()
        Thread.detachNewThread {
            let child = try? ChildProcess("/bin/sleep", ["300"], stdin: Data(count: 8 << 20))
            started.child.withLock { $0 = child }
        }
        try await waitUntil { started.child.withLock { $0 != nil } }
        let child = try #require(started.child.withLock { $0.take() })
        child.signal(SIGKILL)
        #expect(try await child.wait().status == SIGKILL)
    }
}
