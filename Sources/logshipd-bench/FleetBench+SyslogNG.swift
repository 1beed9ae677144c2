import Foundation
import LogShip
import LogShipTestKit

extension FleetBench {
    /// The same fleet of syslog-ng 3.38 instances (`bench/syslog-ng-http-throttle.conf`): `http()` with two workers,
    /// `throttle()` at the fleet's share of the receiver's rate, a disk buffer, and `time-reopen()` as long as
    /// logshipd's `upload.retry_max`. syslog-ng 3.38 answers a 429 like a refused connection: the batch stays
    /// queued and the worker waits `time-reopen()`. Its crash probes are lines like any other (it has no crash
    /// lane), written to the first instance's socket.
    ///
    /// - Returns: `nil` when syslog-ng is not installed.
    static func runSyslogNG(_ setup: Setup) async throws -> Outcome? {
        guard FileManager.default.isExecutableFile(atPath: PeerComparison.syslogNG) else {
            print("syslog-ng is not installed: make bench installs it (syslog-ng-core, syslog-ng-mod-http)")
            return nil
        }
        let template = try String(
            contentsOf: PeerComparison.packageRoot.appendingPathComponent("bench/syslog-ng-http-throttle.conf"),
            encoding: .utf8)
        let reservation = try PortReservation()
        // Two workers, each with its own queue and throttle: half the fleet's share each.
        let throttle = max(1, Int((setup.linesPerSecond / Double(setup.senders) / 2).rounded()))
        var instances: [(process: ChildProcess, directory: String)] = []
        do {
            for index in 0..<setup.senders {
                let directory = try TemporaryDirectory.make()
                let configuration = "\(directory)/syslog-ng.conf"
                try template
                    .replacingOccurrences(of: "@STREAM@", with: "\(directory)/ingest.sock")
                    .replacingOccurrences(
                        of: "@URL@", with: RequestLogReceiver.url(port: reservation.port, sender: index))
                    .replacingOccurrences(of: "@THROTTLE@", with: String(throttle))
                    .replacingOccurrences(of: "@TIME_REOPEN@", with: String(setup.retryMax))
                    .replacingOccurrences(of: "@DIR@", with: directory)
                    .write(toFile: configuration, atomically: true, encoding: .utf8)
                let process = try ChildProcess(PeerComparison.syslogNG, [
                    "-F", "-e", "-f", configuration, "--no-caps", "-R", "\(directory)/persist",
                    "-p", "\(directory)/pid",
                    "-c", "\(directory)/ctl",
                ])
                instances.append((process, directory))
            }
            for instance in instances {
                let stream = "\(instance.directory)/ingest.sock"
                try await waitUntil(within: .seconds(60)) { PeerComparison.acceptsStreamConnections(stream) }
            }
            let fleet = instances
            let firstWrite = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for instance in fleet {
                    group.addTask {
                        try await PeerComparison.generate(lines: setup.backlog, to: "\(instance.directory)/ingest.sock")
                    }
                }
                try await group.waitForAll()
            }
            for instance in fleet {
                try await eventually(within: .seconds(300)) {
                    try await processed(control: "\(instance.directory)/ctl") >= setup.backlog
                }
            }
            let probeClient = try UnixClient(path: "\(fleet[0].directory)/ingest.sock", type: .stream)
            let outcome = try await drain(
                setup, shipper: "syslog-ng", reservation: reservation, firstWrite: firstWrite
            ) {
                CrashProbes(every: setup.crashInterval) { message in
                    try probeClient.write("<10>Nov 22 10:00:00 web-0 app[7]: \(message)\n")
                }
            }
            try await stop(instances)
            return outcome
        } catch {
            try? await stop(instances)
            throw error
        }
    }

    /// The lines an instance's source has read, from `syslog-ng-ctl stats`.
    private static func processed(control: String) async throws -> Int {
        let result = try await run("/usr/sbin/syslog-ng-ctl", ["stats", "-c", control])
        guard result.status == 0 else { throw CommandFailed("syslog-ng-ctl stats", result) }
        let line = result.standardOutput.split(separator: "\n").first { $0.hasPrefix("source;s_in;;a;processed;") }
        return line.flatMap { $0.split(separator: ";").last }.flatMap { Int($0) } ?? 0
    }

    private static func stop(_ instances: [(process: ChildProcess, directory: String)]) async throws {
        for instance in instances { instance.process.signal(SIGTERM) }
        for instance in instances {
            _ = try await instance.process.wait(within: .seconds(60))
            try? FileManager.default.removeItem(atPath: instance.directory)
        }
    }
}
