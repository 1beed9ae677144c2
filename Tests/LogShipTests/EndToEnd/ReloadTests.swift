import Foundation
import LogShip
import LogShipTestKit
import Testing

/// SIGHUP (`systemctl reload`): what can change while running does, the rest is named, a broken file is refused.
@Suite("Reload on SIGHUP")
struct ReloadTests {
    @Test("a new upload URL takes the next requests; a broken file keeps the running configuration")
    func reload() async throws {
        let first = try await TestReceiver()
        let second = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        let listener = try NotifySocketListener(directory: directory)
        try LogshipdProcess.configure(directory: directory, url: first.url)
        try? FileManager.default.removeItem(atPath: "\(directory)/control.sock")
        let daemon = try await ChildProcess.start(
            Binaries.logshipd, ["--config", "\(directory)/logshipd.yaml"],
            environment: ["NOTIFY_SOCKET": listener.path!])
        try await waitUntil { !listener.assignments(of: "READY").isEmpty }
        let socket = "\(directory)/control.sock"
        func send(_ prefix: String) async throws {
            let result = try await run(
                Binaries.logctl, ["send", "--socket", socket],
                stdin: Data((0..<5).map { "\(prefix) \($0)\n" }.joined().utf8))
            #expect(result.status == 0, "\(result.standardError)")
        }

        try await send("before")
        try await first.waitFor(records: 5)

        try LogshipdProcess.configure(directory: directory, url: second.url)
        daemon.signal(SIGHUP)
        try await waitUntil { daemon.standardErrorSoFar.contains("configuration reloaded") }
        try await send("after")
        try await second.waitFor(records: 5)
        #expect(second.records.map(\.message) == (0..<5).map { "after \($0)" })
        #expect(
            first.records.count == 5,
            """
            nothing more went to the old URL: \(first.requests.map(\.summary)); \
            the daemon's log: \(daemon.standardErrorSoFar)
            """)
        let reloading = try #require(listener.assignments(of: "RELOADING").first)
        #expect(reloading.value == "1")
        #expect(listener.notifications.contains { $0.state.contains("MONOTONIC_USEC=") })
        #expect(listener.assignments(of: "READY").count == 2, "ready again after the reload")

        try "upload:\n  urll: http://nowhere\n"
            .write(toFile: "\(directory)/logshipd.yaml", atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        try await waitUntil { daemon.standardErrorSoFar.contains("reload refused; the running configuration stays") }
        #expect(daemon.standardErrorSoFar.contains("unknown key upload.urll"))
        try await send("still")
        try await second.waitFor(records: 10)
        #expect(first.records.count == 5)

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("""
        a reload of a half-written file, of one without upload.url, or of one changing a restart-only key is refused \
        whole, in one line saying why
        """)
    func refusedReloads() async throws {
        let first = try await TestReceiver()
        let second = try await TestReceiver()
        let directory = try TemporaryDirectory.make()
        let path = try LogshipdProcess.configure(directory: directory, url: first.url)
        let daemon = try await LogshipdProcess.start(directory: directory)
        let socket = "\(directory)/control.sock"
        var sent = 0
        func send() async throws {
            let result = try await run(Binaries.logctl, ["send", "--socket", socket, "record \(sent)"])
            #expect(result.status == 0, "\(result.standardError)")
            sent += 1
        }
        /// Signals a reload and returns the line the daemon logged about it.
        func reload() async throws -> String {
            let before = daemon.standardErrorSoFar.components(separatedBy: "reload").count
            daemon.signal(SIGHUP)
            try await waitUntil {
                let log = daemon.standardErrorSoFar
                return log.components(separatedBy: "reload").count > before && log.hasSuffix("\n")
            }
            return try #require(
                daemon.standardErrorSoFar.split(separator: "\n").last { $0.contains("reload") }
            ).description
        }
        try await send()
        try await first.waitFor(records: 1)

        // The new file as an editor writing in place leaves it halfway: its upload section not yet there.
        try LogshipdProcess.configure(directory: directory, url: second.url)
        let whole = try String(contentsOfFile: path, encoding: .utf8)
        let upload = try #require(whole.range(of: "upload:"))
        let half = String(whole[..<upload.lowerBound])
        try half.write(toFile: path, atomically: true, encoding: .utf8)
        let halfLine = try await reload()
        #expect(halfLine.contains("reload refused") && halfLine.contains("upload.url is not set"), "\(halfLine)")
        let check = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(check.status == 1 && check.standardError.contains("upload.url is not set"), "\(check.standardError)")

        // A new URL beside a key that needs a restart: neither is applied.
        try LogshipdProcess.configure(directory: directory, url: second.url, ingest: ["max_record_bytes: 256KiB"])
        let restartLine = try await reload()
        #expect(
            restartLine.contains("reload refused") && restartLine.contains("ingest.max_record_bytes"),
            "\(restartLine)")
        try await send()
        try await first.waitFor(records: 2)
        #expect(second.records.isEmpty, "nothing went to the URL of a refused file")

        // The whole file applies.
        try LogshipdProcess.configure(directory: directory, url: second.url)
        #expect(try await reload().contains("configuration reloaded"))
        try await send()
        try await second.waitFor(records: 1)
        #expect(first.records.count == 2)

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }
}
