import Foundation
import LogShip
import LogShipTestKit
import Testing

/// `logctl throttle`, the budget's keys, and SIGHUP: what an operator does with the link's budget.
@Suite("Throttle commands")
struct ThrottleCommandTests {
    func status(_ socket: String) async throws -> DaemonStatus {
        let result = try await run(Binaries.logctl, ["status", "--json", "--socket", socket])
        #expect(result.status == 0, "\(result.standardError)")
        return try JSONDecoder().decode(DaemonStatus.self, from: Data(result.standardOutput.utf8))
    }

    @Test("""
        logctl throttle overrides the budget until SIGHUP applies the file's; only root or logshipd's user may; one \
        below a record is refused
        """)
    func throttleAndReload() async throws {
        let receiver = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        let listener = try NotifySocketListener(directory: directory)
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, ingest: ["socket_mode: \"0666\""],
            upload: ["rate:", "  bytes_per_second: 1MiB/s"])
        chmod(directory, 0o755)
        let daemon = try await ChildProcess.start(
            Binaries.logshipd, ["--config", "\(directory)/logshipd.yaml"],
            environment: ["NOTIFY_SOCKET": listener.path!])
        try await waitUntil { !listener.assignments(of: "READY").isEmpty }
        let socket = "\(directory)/control.sock"
        var current = try await status(socket)
        #expect(current.rateBudget == 1 << 20 && current.rateEffective == 1 << 20 && !current.rateBudgetByOperator)

        let set = try await run(Binaries.logctl, ["throttle", "256KiB/s", "--socket", socket])
        #expect(
            set.status == 0 && set.standardOutput == "upload budget 256 KiB/s until the next reload\n",
            "\(set.standardError)")
        current = try await status(socket)
        #expect(current.rateBudget == 256 << 10 && current.rateEffective == 256 << 10 && current.rateBudgetByOperator)
        let table = try await run(Binaries.logctl, ["status", "--socket", socket])
        #expect(
            table.standardOutput.contains("upload rate   256 KiB/s (set by logctl throttle until the next reload)"),
            "\(table.standardOutput)")

        let tooSmall = try await run(Binaries.logctl, ["throttle", "1KiB/s", "--socket", socket])
        #expect(tooSmall.status == 1)
        #expect(
            tooSmall.standardError.contains("less than one record of ingest.max_record_bytes (64KiB)"),
            "\(tooSmall.standardError)")
        let garbled = try await run(Binaries.logctl, ["throttle", "fast", "--socket", socket])
        #expect(garbled.status != 0 && garbled.standardError.contains("is not a rate"), "\(garbled.standardError)")
        if getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            let refused = try await run(
                "/usr/bin/setpriv",
                [
                    "--reuid=65534", "--regid=65534", "--clear-groups", Binaries.logctl, "throttle", "off",
                    "--socket", socket,
                ])
            #expect(refused.status == 1)
            #expect(
                refused.standardError
                    == "logctl: throttle needs root or logshipd's own user (uid 0); you are uid 65534\n")
        }
        #expect(try await status(socket).rateBudget == 256 << 10, "neither refusal changed it")

        let off = try await run(Binaries.logctl, ["throttle", "off", "--socket", socket])
        #expect(off.status == 0 && off.standardOutput == "upload budget lifted until the next reload\n")
        current = try await status(socket)
        #expect(current.rateBudget == nil && current.rateEffective == nil && current.rateBudgetByOperator)

        // A reload takes the file's budget at once, the new one, and the operator's ends.
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, ingest: ["socket_mode: \"0666\""],
            upload: ["rate:", "  bytes_per_second: 2MiB", "  requests_per_second: 50"])
        daemon.signal(SIGHUP)
        try await waitUntil { listener.assignments(of: "READY").count == 2 }
        current = try await status(socket)
        #expect(current.rateBudget == 2 << 20 && !current.rateBudgetByOperator && current.rateRequestsPerSecond == 50)
        try await waitUntil { listener.assignments(of: "STATUS").contains { $0.value.contains("rate 2.0 MiB/s") } }

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("--check-config names a budget below one record, an unknown exempt class, and a floor above the budget")
    func checkConfig() async throws {
        let directory = try TemporaryDirectory.make()
        let path = try LogshipdProcess.configure(
            directory: directory, url: "http://127.0.0.1:9/", ingest: ["max_record_bytes: 64KiB"],
            upload: ["rate:", "  bytes_per_second: 32KiB/s", "  exempt: [crash, urgent]"])
        let result = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(result.status != 0)
        #expect(
            result.standardError.contains("upload.rate.exempt: unknown class \"urgent\""), "\(result.standardError)")

        try LogshipdProcess.configure(
            directory: directory, url: "http://127.0.0.1:9/", upload: ["rate:", "  bytes_per_second: 32KiB/s"])
        let small = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(small.status != 0)
        #expect(
            small.standardError.contains(
                "upload.rate.bytes_per_second (32 KiB/s) over upload.rate.burst_seconds (1) allows 32KiB at once, "
                    + "less than one record of ingest.max_record_bytes (64KiB)"),
            "\(small.standardError)")

        try LogshipdProcess.configure(
            directory: directory, url: "http://127.0.0.1:9/",
            upload: ["rate:", "  bytes_per_second: 128KiB", "  min_bytes_per_second: 256KiB", "  burst_seconds: 2"])
        let floor = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(
            floor.status != 0
                && floor.standardError.contains("upload.rate.min_bytes_per_second (256 KiB/s) must not exceed"),
            "\(floor.standardError)")

        try LogshipdProcess.configure(
            directory: directory, url: "http://127.0.0.1:9/",
            upload: ["rate:", "  bytes_per_second: 1MiB/s", "  exempt: [crash, error]", "  burst_seconds: 0.5"])
        let good = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(good.status == 0, "\(good.standardError)")
    }
}
