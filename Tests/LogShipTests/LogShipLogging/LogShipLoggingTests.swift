import Foundation
import LogShip
import LogShipTestKit
import Logging
import Testing

@testable import LogShipLogging

/// The swift-log backend: what it sends, that it never waits for the daemon, and what it drops and says so.
@Suite("LogShipLogging, the swift-log backend")
struct LogShipLoggingTests {
    @Test("a log call becomes a record with its level's severity, metadata and source location as fields")
    func recordShape() async throws {
        let directory = try TemporaryDirectory.make()
        let daemon = try await TestDaemon.start(receiver: try await TestReceiver(), directory: directory)
        var logger = Logger(label: "shop.payments") {
            LogShipLogHandler(label: $0, sink: LogShipSink(socketPath: "\(directory)/ingest.dgram"))
        }
        logger[metadataKey: "service"] = "payments"
        logger.warning("card declined \"4242\"\nretrying", metadata: ["order": "1234"])
        logger.critical("worker 7 died", metadata: .crashReport)
        try await daemon.receiver.waitFor(records: 2)
        try await daemon.stop()

        let records = daemon.receiver.records.sorted { $0.severity > $1.severity }
        #expect(records.map(\.message) == ["card declined \"4242\"\nretrying", "worker 7 died"])
        #expect(records.map(\.severity) == [.warning, .critical])
        #expect(records.map(\.priority) == [.warning, .crash])
        let fields = records[0].fields
        #expect(fields["order"] == "1234" && fields["service"] == "payments" && fields["logger"] == "shop.payments")
        #expect(fields["file"]?.hasSuffix("LogShipLoggingTests.swift") == true && fields["line"] != nil)
        #expect(fields["source"] == "LogShipTests" && fields["function"] != nil)
        #expect(records[1].fields[LogShipLogHandler.priorityKey] == nil, "the marker is the priority, not a field")
        #expect(records.allSatisfy { $0.source == .datagram && $0.peer?.pid == getpid() })
    }

    @Test("with no daemon, logging does not wait; what overflows the buffer is dropped, counted and reported")
    func dropsAreCountedAndReported() async throws {
        let directory = try TemporaryDirectory.make()
        let sink = LogShipSink(socketPath: "\(directory)/ingest.dgram", capacity: 100)
        let logger = Logger(label: "burst") { LogShipLogHandler(label: $0, sink: sink) }
        var slowCalls = 0
        for index in 0..<1000 {
            let start = ContinuousClock.now
            logger.info("burst \(index)")
            if ContinuousClock.now - start >= .milliseconds(50) { slowCalls += 1 }
        }
        // A call that waited for the daemon would take the sender's pause of 50 ms to 2 s, for each of the 900
        // records the buffer has no room for; a few slow calls are the machine preempting this thread.
        #expect(slowCalls <= 10, "\(slowCalls) calls took 50 ms or more")
        #expect(sink.currentStatistics == .init(sent: 0, dropped: 900, waiting: 100))

        let daemon = try await TestDaemon.start(receiver: try await TestReceiver(), directory: directory)
        try await daemon.receiver.waitFor(records: 101)
        // The sender counts a record once its send returns, which may be after the receiver has it. The flush
        // waits on a condition variable: off the cooperative pool.
        #expect(await offloaded { sink.flush(timeoutSeconds: 60) })
        try await daemon.stop()
        let records = daemon.receiver.records
        #expect(Set(records.map(\.message)).isSuperset(of: (0..<100).map { "burst \($0)" }))
        let report = try #require(records.first { $0.fields["logship_logging_dropped"] != nil })
        #expect(report.fields["logship_logging_dropped"] == "900" && report.severity == .warning)
        #expect(report.message.contains("dropped 900 records"))
        #expect(sink.currentStatistics == .init(sent: 100, dropped: 900, waiting: 0))
    }

    @Test("""
        a program logging 10 000 records goes on while the daemon is stopped and started under socket activation: each \
        call is quick, nothing is lost
        """)
    func restartUnderLoad() async throws {
        let directory = try TemporaryDirectory.make()
        let receiver = try await TestReceiver()
        let activator = try SocketActivator(directory: directory)
        let configuration = try activator.configure(directory: directory, url: receiver.url)
        let errorLog = "\(directory)/logshipd.log"
        try await activator.start(configuration: configuration, errorLog: errorLog)

        let example = Binaries.directory.appendingPathComponent("logship-logging-example").path
        // It pauses after 4 000 records; the daemon stops, the program goes on, and the daemon starts again while
        // the program logs the other 6 000.
        let program = try await ChildProcess.start(example, [activator.datagramPath, "10000", "4000"])
        try await waitUntil { program.standardErrorSoFar.contains("paused") }
        // The program does not wait for the daemon (its records wait in the socket), so that says nothing about
        // whether logshipd handles SIGTERM yet; a status answer does: the control socket is served only once the
        // service group, which traps the signal, runs.
        _ = try await LogshipdProcess.status(socket: activator.controlPath)
        #expect(try await activator.stop() == 0)
        program.signal(SIGUSR1)
        try await activator.start(configuration: configuration, errorLog: errorLog)
        let result = try await program.wait(within: .seconds(300))
        #expect(result.status == 0, "\(result.standardError)")
        // sent=… dropped=… waiting=… slowest_call_us=… calls_over_50ms=…
        let words = result.standardOutput.split(whereSeparator: \.isWhitespace)
        let figures = Dictionary(uniqueKeysWithValues: words.compactMap { pair in
            let parts = pair.split(separator: "=")
            return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? -1) : nil
        })
        #expect(
            figures["sent"] == 10_000 && figures["dropped"] == 0 && figures["waiting"] == 0, "\(result.standardOutput)")
        let slowest = try #require(figures["slowest_call_us"])
        let slowCalls = try #require(figures["calls_over_50ms"])
        print("logship-logging-example: slowest logging call \(slowest) µs, \(slowCalls) calls of 50 ms or more")
        // A call that waited for the stopped daemon would take the sender's pause of 50 ms to 2 s, for every record
        // logged meanwhile; a few slow calls are the machine preempting the program.
        #expect(slowCalls <= 10, "no call waits for the daemon")

        try await receiver.waitFor(records: 10_000)
        #expect(try await activator.stop() == 0)
        let records = receiver.records
        let indices = records.compactMap { $0.fields["index"].flatMap { Int($0) } }
        #expect(records.count == 10_000 && Set(indices) == Set(0..<10_000), "each record once")
        #expect(records.filter { $0.priority == .crash }.count == 10)
        #expect(records.allSatisfy { $0.fields["service"] == "orders" && $0.fields["logger"] == "example.orders" })
    }
}
