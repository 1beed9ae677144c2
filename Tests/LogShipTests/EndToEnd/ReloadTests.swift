import Foundation
import LogShip
import LogShipTestKit
import Testing

/// SIGHUP (`systemctl reload`): what can change while running does, the rest is named, a broken file is refused.
@Suite("Reload on SIGHUP")
struct ReloadTests {
    @Test("a new upload URL takes the next requests; a restart-only change is named; a broken file keeps the running configuration")
    func reload() async throws {
        let first = try await TestReceiver()
        let second = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        let listener = try NotifySocketListener(directory: directory)
        try LogshipdProcess.configure(directory: directory, url: first.url)
        try? FileManager.default.removeItem(atPath: "\(directory)/control.sock")
        let daemon = try ChildProcess(
            Binaries.logshipd, ["--config", "\(directory)/logshipd.yaml"], environment: ["NOTIFY_SOCKET": listener.path!])
        try await waitUntil { !listener.assignments(of: "READY").isEmpty }
        let socket = "\(directory)/control.sock"
        func send(_ prefix: String) async throws {
            let result = try await run(Binaries.logctl, ["send", "--socket", socket], stdin: Data((0..<5).map { "\(prefix) \($0)\n" }.joined().utf8))
            #expect(result.status == 0, "\(result.standardError)")
        }

        try await send("before")
        try await first.waitFor(records: 5)

        try LogshipdProcess.configure(directory: directory, url: second.url, ingest: ["max_record_bytes: 256KiB"])
        daemon.signal(SIGHUP)
        try await waitUntil {
            daemon.standardErrorSoFar.contains(
                "configuration reloaded; these changes need a restart and were not applied: ingest.max_record_bytes")
        }
        try await send("after")
        try await second.waitFor(records: 5)
        #expect(second.records.map(\.message) == (0..<5).map { "after \($0)" })
        #expect(first.records.count == 5, "nothing more went to the old URL")
        let reloading = try #require(listener.assignments(of: "RELOADING").first)
        #expect(reloading.value == "1")
        #expect(listener.notifications.contains { $0.state.contains("MONOTONIC_USEC=") })
        #expect(listener.assignments(of: "READY").count == 2, "ready again after the reload")

        try "upload:\n  urll: http://nowhere\n".write(toFile: "\(directory)/logshipd.yaml", atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        try await waitUntil { daemon.standardErrorSoFar.contains("reload rejected; the running configuration stays") }
        #expect(daemon.standardErrorSoFar.contains("unknown key upload.urll"))
        try await send("still")
        try await second.waitFor(records: 10)
        #expect(first.records.count == 5)

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }
}
