import Foundation
import LogShip
import LogShipTestKit
import Testing

/// HTTPS to the remote with the `tls.*` keys, against a TLS receiver on loopback with certificates made by
/// openssl: the real logshipd binary, reloaded with SIGHUP as an operator would.
@Suite("TLS and credentials")
struct TLSTests {
    static func send(_ messages: [String], _ directory: String) async throws {
        let result = try await run(
            Binaries.logctl, ["send", "--socket", "\(directory)/control.sock"],
            stdin: Data(messages.map { $0 + "\n" }.joined().utf8))
        guard result.status == 0 else { throw CommandFailed("logctl send", result) }
    }

    /// Waits until the daemon has failed `count` more requests than `since`, with nothing delivered or
    /// dead-lettered; returns the status then.
    static func failures(_ count: Int, since: Int, _ directory: String) async throws -> DaemonStatus {
        try await eventually { try await LogshipdProcess.status(directory: directory).failedRequests >= since + count }
        return try await LogshipdProcess.status(directory: directory)
    }

    @Test("""
        tls.ca_file: an unknown CA is refused, retried, and said in words in status and the log (BoringSSL's only at \
        debug level); a reload that trusts it delivers
        """)
    func serverVerification() async throws {
        let directory = try TemporaryDirectory.make()
        let trusted = try await TestCertificateAuthority(directory: directory, name: "trusted-ca")
        let unknown = try await TestCertificateAuthority(directory: directory, name: "unknown-ca")
        let server = try await unknown.issue("server", for: .server)
        let receiver = try await TestReceiver(
            tls: LogReceiver.serverTLS(certificateFile: server.certificate, keyFile: server.key))
        #expect(receiver.url.hasPrefix("https://127.0.0.1:"))
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, sections: ["tls": ["ca_file: \(trusted.certificate)"]])
        let daemon = try await LogshipdProcess.start(directory: directory)
        defer { daemon.signal(SIGKILL) }

        try await Self.send((0..<5).map { "over tls \($0)" }, directory)
        let refused = try await Self.failures(2, since: 0, directory)
        #expect(receiver.requests.isEmpty, "no request gets past the handshake")
        // A further attempt may hold the records claimed by now: held is pending plus claimed.
        #expect(
            refused.delivered == 0 && refused.deadLettered == 0
                && (refused.pending["info"] ?? 0) + refused.claimed == 5)
        let remote = "127.0.0.1:\(try #require(receiver.receiver.address.port))"
        let words = "TLS certificate of \(remote) not trusted by tls.ca_file \(trusted.certificate) "
            + "(issued by another CA, or expired)"
        #expect(refused.lastError == words && !refused.lastErrorPast)
        #expect(refused.retriedRequests == refused.failedRequests && refused.rejectedRequests == 0)
        let table = try await run(Binaries.logctl, ["status", "--socket", "\(directory)/control.sock"]).standardOutput
        #expect(table.contains("last error    \(words)\n"), "\(table)")
        #expect(table.contains("; no request accepted since"), "\(table)")
        #expect(daemon.standardErrorSoFar.contains(words), "the failure is logged in words")
        #expect(
            !daemon.standardErrorSoFar.contains("CERTIFICATE_VERIFY_FAILED"), "BoringSSL's words only at debug level")

        try LogshipdProcess.configure(
            directory: directory, url: receiver.url,
            sections: ["tls": ["ca_file: \(trusted.certificate)"], "log": ["level: debug"]])
        daemon.signal(SIGHUP)
        try await waitUntil { daemon.standardErrorSoFar.contains("CERTIFICATE_VERIFY_FAILED") }

        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, sections: ["tls": ["ca_file: \(unknown.certificate)"]])
        daemon.signal(SIGHUP)
        try await receiver.waitFor(records: 5)
        #expect(Set(receiver.records.map(\.message)) == Set((0..<5).map { "over tls \($0)" }))
        #expect(try await LogshipdProcess.status(directory: directory).deadLettered == 0)
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("mutual TLS: no client certificate or one from another CA is refused and kept; the right one delivers")
    func mutualTLS() async throws {
        let directory = try TemporaryDirectory.make()
        let serverCA = try await TestCertificateAuthority(directory: directory, name: "server-ca")
        let clientCA = try await TestCertificateAuthority(directory: directory, name: "client-ca")
        let rogueCA = try await TestCertificateAuthority(directory: directory, name: "rogue-ca")
        let server = try await serverCA.issue("server", for: .server)
        let client = try await clientCA.issue("client", for: .client)
        let rogue = try await rogueCA.issue("rogue-client", for: .client)
        let receiver = try await TestReceiver(
            tls: LogReceiver.serverTLS(
                certificateFile: server.certificate, keyFile: server.key, clientCAFile: clientCA.certificate))
        func configure(client: TestCertificateAuthority.Issued?) throws {
            var tls = ["ca_file: \(serverCA.certificate)"]
            if let client { tls += ["client_cert: \(client.certificate)", "client_key: \(client.key)"] }
            try LogshipdProcess.configure(directory: directory, url: receiver.url, sections: ["tls": tls])
        }
        try configure(client: nil)
        let daemon = try await LogshipdProcess.start(directory: directory)
        defer { daemon.signal(SIGKILL) }
        try await Self.send(["crash report", "after it"], directory)

        let withoutCertificate = try await Self.failures(2, since: 0, directory)
        #expect(withoutCertificate.delivered == 0 && withoutCertificate.deadLettered == 0)

        try configure(client: rogue)
        daemon.signal(SIGHUP)
        try await waitUntil { daemon.standardErrorSoFar.contains("configuration reloaded") }
        let reloadedAt = try await LogshipdProcess.status(directory: directory).failedRequests
        let withRogue = try await Self.failures(2, since: reloadedAt, directory)
        #expect(withRogue.delivered == 0 && withRogue.deadLettered == 0)
        #expect(receiver.records.isEmpty, "the receiver accepted no record from an unverified client")

        try configure(client: client)
        daemon.signal(SIGHUP)
        try await receiver.waitFor(records: 2)
        #expect(try await LogshipdProcess.status(directory: directory).deadLettered == 0)
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("bearer token and basic password reach the remote and appear nowhere else, even at log level trace")
    func secretsStaySecret() async throws {
        let directory = try TemporaryDirectory.make()
        let token = "tok-\(UInt64.random(in: 1..<UInt64.max))"
        let password = "pw-\(UInt64.random(in: 1..<UInt64.max))"
        try token.write(toFile: "\(directory)/token", atomically: true, encoding: .utf8)
        try password.write(toFile: "\(directory)/password", atomically: true, encoding: .utf8)
        let receiver = try await TestReceiver()
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url,
            sections: ["auth": ["bearer_token_file: \(directory)/token"], "log": ["level: trace"]])
        let daemon = try await LogshipdProcess.start(directory: directory)
        defer { daemon.signal(SIGKILL) }
        try await Self.send(["with a token"], directory)
        try await receiver.waitFor(records: 1)
        #expect(receiver.requests.last?.authorization == "Bearer \(token)")

        try LogshipdProcess.configure(
            directory: directory, url: receiver.url,
            sections: [
                "auth": ["basic_user: shipper", "basic_password_file: \(directory)/password"], "log": ["level: trace"],
            ])
        daemon.signal(SIGHUP)
        try await waitUntil { daemon.standardErrorSoFar.contains("configuration reloaded") }
        try await Self.send(["with a password"], directory)
        try await receiver.waitFor(records: 2)
        let basic = "Basic " + Data("shipper:\(password)".utf8).base64EncodedString()
        #expect(receiver.requests.last?.authorization == basic, "\(receiver.requests.map(\.summary))")

        let status = try await run(Binaries.logctl, ["status", "--socket", "\(directory)/control.sock"])
        let json = try await run(Binaries.logctl, ["status", "--json", "--socket", "\(directory)/control.sock"])
        daemon.signal(SIGTERM)
        let stopped = try await daemon.wait()
        #expect(stopped.status == 0)
        #expect(stopped.standardError.contains(" debug "), "the daemon logged verbosely")
        for (name, text) in [("daemon log", stopped.standardError + stopped.standardOutput),
                             ("status", status.standardOutput), ("status --json", json.standardOutput)] {
            for secret in [token, password, String(basic.dropFirst(6))] {
                #expect(!text.contains(secret), "\(name) shows a secret")
            }
        }
    }

    @Test("""
        tls.server_name verifies a certificate for another name; tls.min_version 1.3 refuses a TLS 1.2 remote; \
        insecure_skip_verify trusts anything
        """)
    func serverNameVersionAndSkipVerify() async throws {
        let directory = try TemporaryDirectory.make()
        let ca = try await TestCertificateAuthority(directory: directory, name: "ca")
        let named = try await ca.issue("named", for: .serverNamed("logs.example.internal"))
        let receiver = try await TestReceiver(
            tls: LogReceiver.serverTLS(certificateFile: named.certificate, keyFile: named.key))

        let mismatched = try await TestDaemon.start(receiver: receiver) { $0.tls.caFile = ca.certificate }
        #expect(try await mismatched.send([Submission(message: "wrong name")]).ok)
        try await eventually { try await mismatched.status().failedRequests >= 1 }
        #expect(receiver.requests.isEmpty, "the certificate does not name 127.0.0.1")
        try await mismatched.stop()

        let renamed = try await TestDaemon.start(receiver: receiver) {
            $0.tls.caFile = ca.certificate
            $0.tls.serverName = "logs.example.internal"
        }
        #expect(try await renamed.send([Submission(message: "right name")]).ok)
        try await receiver.waitFor(records: 1)
        try await renamed.stop()

        var tls12 = try LogReceiver.serverTLS(certificateFile: named.certificate, keyFile: named.key)
        tls12.maximumTLSVersion = .tlsv12
        let oldReceiver = try await TestReceiver(tls: tls12)
        let strict = try await TestDaemon.start(receiver: oldReceiver) {
            $0.tls.caFile = ca.certificate
            $0.tls.serverName = "logs.example.internal"
            $0.tls.minVersion = "1.3"
        }
        #expect(try await strict.send([Submission(message: "needs 1.3")]).ok)
        try await eventually { try await strict.status().failedRequests >= 1 }
        let refused = try await strict.status()
        #expect(oldReceiver.requests.isEmpty && refused.deadLettered == 0)
        #expect(
            refused.lastError?.hasSuffix("have no TLS version in common (tls.min_version is 1.3)") == true,
            "\(refused.lastError ?? "")")
        try await strict.stop()

        let anything = try await TestDaemon.start(receiver: oldReceiver) { $0.tls.insecureSkipVerify = true }
        #expect(try await anything.send([Submission(message: "unverified")]).ok)
        try await oldReceiver.waitFor(records: 1)
        try await anything.stop()
    }
}
