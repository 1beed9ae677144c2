import Foundation
import LogShip
import LogShipTestKit
import Testing

/// What logctl prints from elsewhere (records, a remote's answers) cannot drive the terminal it is printed on.
@Suite("Text for a terminal")
struct TerminalTextTests {
    @Test("control characters, C1 controls and bidirectional marks become escapes; a backslash is doubled")
    func escapes() {
        #expect(TerminalText.escaped("plain text, é and 日本") == "plain text, é and 日本")
        #expect(TerminalText.escaped("a\nb\tc\r") == #"a\nb\tc\r"#)
        #expect(TerminalText.escaped("\u{1B}]0;pwned\u{07}\u{1B}[2J") == #"\e]0;pwned\x07\e[2J"#)
        #expect(TerminalText.escaped("\u{0}\u{7F}\u{9B}\u{202E}") == #"\x00\x7F\u{009B}\u{202E}"#)
        #expect(TerminalText.escaped(#"C:\new"#) == #"C:\\new"#, "a literal backslash-n is not a newline")
    }

    @Test("logctl receive's line escapes the message, the fields, the host and the process name")
    func recordLine() {
        let record = LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: 0), priority: .info, severity: .informational,
            host: "h\u{1B}[31m", source: .socket, message: "first\nsecond\u{1B}[2J",
            peer: PeerCredentials(pid: 1, uid: 2, gid: 3, comm: "c\u{07}"), fields: ["k\u{1B}": "v\u{1B}"])
        let line = RecordPrinter(colored: false, quiet: true).line(for: record)
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(line)")
        #expect(line.contains(#"first\nsecond\e[2J"#) && line.contains(#"{k\e=v\e}"#) && line.contains(#"c\x07[1]"#))
    }

    /// A remote that answers every request with the status given as its argument and a body that would retitle
    /// and clear a terminal.
    static let hostileRemote = #"""
        import http.server, sys
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = b"\x1b]0;pwned\x07\x1b[2Jrefused"
                self.send_response(int(sys.argv[1]))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        sys.stderr.write("port %d\n" % server.server_port); sys.stderr.flush()
        server.serve_forever()
        """#

    @Test(
        "logctl status and logctl dead-letters show a remote's escape sequences as text",
        arguments: [(503, ["status"]), (400, ["dead-letters"])])
    func remoteAnswers(status: Int, command: [String]) async throws {
        let remote = try await ChildProcess.start("/usr/bin/python3", ["-c", Self.hostileRemote, String(status)])
        defer { remote.signal(SIGKILL) }
        try await waitUntil { remote.standardErrorSoFar.hasPrefix("port ") }
        let port = try #require(Int(remote.standardErrorSoFar.dropFirst(5).prefix { $0.isNumber }))
        let daemon = try await TestDaemon.start { $0.upload.url = "http://127.0.0.1:\(port)/ingest" }
        #expect(try await daemon.send([Submission(message: "refused one")]).ok)
        try await eventually {
            let daemonStatus = try await daemon.status()
            return daemonStatus.deadLetters == 1 || daemonStatus.lastFailure != nil
        }

        let result = try await run(Binaries.logctl, command + ["--socket", daemon.controlPath])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(!result.standardOutput.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        #expect(result.standardOutput.contains(#"\e]0;pwned\x07\e[2Jrefused"#), "\(result.standardOutput)")
        try await daemon.stop()
    }
}
