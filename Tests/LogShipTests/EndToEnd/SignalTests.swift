import Foundation
import Synchronization
import Testing

import LogShipTestKit
@testable import LogShip

/// Signals that come while the daemon starts: trapped from before its first socket, handed over once it runs.
@Suite("Signals")
struct SignalTests {
    /// Set once when a task it watches ends.
    private final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    @Test("a shutdown signal that comes between start and run is kept: run() starts the services and stops them")
    func signalBeforeRun() async throws {
        let receiver = try await TestReceiver()
        let configuration = TestDaemon.configuration(directory: try TemporaryDirectory.make(), url: receiver.url)
        // SIGWINCH stands in for SIGTERM in this shared test process: its default action is to do nothing, so a
        // signal the daemon did not trap is lost (and run() would not return), not the death of every test.
        let daemon = try await Daemon.start(configuration: configuration, logger: .test, shutdownSignals: [.sigwinch])
        kill(getpid(), SIGWINCH)

        let returned = Flag()
        let running = Task {
            defer { returned.set() }
            try await daemon.run()
        }
        do {
            // A bound for a loaded machine: in two warm CI runs, 30 s ran out while the test process's tasks stalled.
            try await waitUntil(within: .seconds(300)) { returned.isSet }
        } catch {
            await daemon.shutdown()
            throw error
        }
        try await running.value
    }

    @Test(
        "logshipd: SIGTERM as soon as the control socket exists stops it cleanly (exit 0); SIGHUP then does not end it"
    )
    func signalsWhileStarting() async throws {
        // LogshipdProcess.start returns once it sees the control socket, which the daemon binds before its
        // service group runs: about when `systemctl stop` right after a start, or `reload` right after READY=1,
        // may come.
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url)
        for _ in 0..<3 {
            let daemon = try await LogshipdProcess.start(directory: directory)
            daemon.signal(SIGTERM)
            let stopped = try await daemon.wait(within: .seconds(180))
            #expect(stopped.status == 0, "\(stopped.standardError)")
        }

        let daemon = try await LogshipdProcess.start(directory: directory)
        daemon.signal(SIGHUP)
        // A daemon that SIGHUP ended would not answer.
        _ = try await LogshipdProcess.status(directory: directory)
        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait(within: .seconds(180))
        #expect(stopped.status == 0, "\(stopped.standardError)")
    }
}
