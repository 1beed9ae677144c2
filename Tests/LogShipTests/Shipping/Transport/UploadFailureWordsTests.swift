import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing

import LogShipTestKit
@testable import LogShip

/// What an operator reads when an upload fails: words that name the remote and what to look at, from real failures
/// on loopback (refused ports, a remote that hangs or resets, certificates made by openssl), with the library's own
/// account kept apart for the debug log.
@Suite("Upload failures in words")
struct UploadFailureWordsTests {
    /// The failure of one upload to `url`; `tls` as the `tls.*` keys would make it, trusting `tls.ca_file ca.pem`.
    static func failure(
        _ url: String, tls: TLSConfiguration? = nil, timeout: Duration = .seconds(30)
    ) async throws -> UploadError {
        // A loop of its own: NIO's singleton group carries every in-process daemon's intake in a full run, and the
        // reset test twice timed out there instead of seeing the reset.
        let group = await startedEventLoopGroup()
        let uploader = try HTTPUploader(
            configuration: .init(url: url, timeout: timeout, tls: tls, trustDescription: "tls.ca_file ca.pem"),
            eventLoops: [group.next()])
        let outcome: Result<Int, any Error>
        do {
            outcome = .success(
                try await uploader.upload(Payload(lines: [Array(#"{"message":"m"}"#.utf8)[...]], batchNumber: 1)))
        } catch {
            outcome = .failure(error)
        }
        // Its shutdown is a task on the loop, which the group's graceful shutdown still runs.
        uploader.shutdown()
        try await group.shutdownGracefully()
        if case .failure(let error as UploadError) = outcome { return error }
        _ = try outcome.get()
        throw WaitTimeout(description: "the upload to \(url) succeeded")
    }

    /// `host:port` of a receiver's URL.
    static func remote(_ receiver: TestReceiver) throws -> String {
        "127.0.0.1:\(try #require(receiver.receiver.address.port))"
    }

    @Test("a remote that accepts and never answers: timed out after upload.timeout, waiting for it to answer")
    func hangingRemote() async throws {
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(hold: { _ in await gate.wait() }))
        // Long enough to connect and send on a loaded machine (1 s was not, beside two CPU hogs); the answer never
        // comes, so the timeout is what ends the call.
        let error = try await Self.failure(receiver.url, timeout: .seconds(5))
        #expect(
            error.description
                == "timed out after 5s waiting for \(try Self.remote(receiver)) to answer (upload.timeout)")
        #expect(error.fault == .remoteUnavailable)
    }

    @Test("no connection within upload.timeout: timed out connecting, naming the remote")
    func connectTimeout() throws {
        let endpoint = try #require(UploadEndpoint(url: "https://[::1]:8443/ingest"))
        let context = HTTPUploader.FailureContext(
            endpoint: endpoint, configuration: .init(url: "https://[::1]:8443/ingest", timeout: .seconds(30)))
        for error: any Error in [UploadClientError.timedOutConnecting, ChannelError.connectTimeout(.seconds(30))] {
            let words = try #require(HTTPUploader.translate(error, context) as? UploadError)
            #expect(words.description == "timed out after 30s connecting to [::1]:8443 (upload.timeout)")
        }
    }

    @Test("a refused connection names the address; the library's account of it is only the detail")
    func refused() async throws {
        let reserved = try PortReservation()  // bound, never listening: connections to it are refused
        let error = try await Self.failure("http://127.0.0.1:\(reserved.port)/ingest")
        #expect(error.description == "cannot connect to 127.0.0.1:\(reserved.port): connection refused")
        #expect(error.detail?.contains("SingleConnectionFailure") == true, "\(error.detail ?? "")")
    }

    @Test("a remote that resets the connection, and a name that does not resolve")
    func resetAndResolution() async throws {
        let resetting = try ResettingServer()
        let reset = try await Self.failure("http://127.0.0.1:\(resetting.port)/ingest")
        #expect(reset.description == "connection reset by 127.0.0.1:\(resetting.port)")
        #expect(reset.detail?.contains("Connection reset by peer") == true, "\(reset.detail ?? "")")

        // .invalid never resolves (RFC 6761).
        let unresolved = try await Self.failure("http://logshipd-test.invalid:8514/ingest")
        #expect(unresolved.description.hasPrefix("cannot resolve logshipd-test.invalid"), "\(unresolved)")
        #expect(!unresolved.description.contains("SocketAddressError"))
    }

    @Test("TLS failures say what is wrong with whom, and which tls.* key it concerns; BoringSSL's words stay in detail")
    func tlsFailures() async throws {
        let directory = try TemporaryDirectory.make()
        let trusted = try await TestCertificateAuthority(directory: directory, name: "trusted-ca")
        let unknown = try await TestCertificateAuthority(directory: directory, name: "unknown-ca")
        var client = TLSConfiguration.makeClientConfiguration()
        client.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(trusted.certificate))
        func receiver(_ issued: TestCertificateAuthority.Issued, clientCA: String? = nil, tls12: Bool = false)
            async throws -> TestReceiver
        {
            var tls = try LogReceiver.serverTLS(
                certificateFile: issued.certificate, keyFile: issued.key, clientCAFile: clientCA)
            if tls12 { tls.maximumTLSVersion = .tlsv12 }
            return try await TestReceiver(tls: tls)
        }

        let untrusted = try await receiver(try await unknown.issue("untrusted", for: .server))
        let notTrusted = try await Self.failure(untrusted.url, tls: client)
        #expect(notTrusted.description
            == "TLS certificate of \(try Self.remote(untrusted)) not trusted by tls.ca_file ca.pem "
                + "(issued by another CA, or expired)")
        #expect(notTrusted.detail?.contains("CERTIFICATE_VERIFY_FAILED") == true, "\(notTrusted.detail ?? "")")

        let named = try await receiver(try await trusted.issue("named", for: .serverNamed("logs.example.internal")))
        #expect(try await Self.failure(named.url, tls: client).description
            == "TLS certificate of \(try Self.remote(named)) is not for 127.0.0.1 "
                + "(tls.server_name sets the name to check)")

        let mutual = try await receiver(try await trusted.issue("server", for: .server), clientCA: trusted.certificate)
        #expect(try await Self.failure(mutual.url, tls: client).description
            == "\(try Self.remote(mutual)) requires a client certificate: set tls.client_cert and tls.client_key")
        let rogue = try await unknown.issue("rogue", for: .client)
        var withRogue = client
        withRogue.certificateChain = try NIOSSLCertificate.fromPEMFile(rogue.certificate).map { .certificate($0) }
        withRogue.privateKey = .privateKey(try NIOSSLPrivateKey(file: rogue.key, format: .pem))
        #expect(try await Self.failure(mutual.url, tls: withRogue).description
            == "\(try Self.remote(mutual)) refused logshipd's client certificate (tls.client_cert): "
                + "its CA is unknown there")

        let old = try await receiver(try await trusted.issue("old", for: .server), tls12: true)
        var strict = client
        strict.minimumTLSVersion = .tlsv13
        #expect(try await Self.failure(old.url, tls: strict).description
            == "TLS handshake failed: \(try Self.remote(old)) and logshipd have no TLS version in common "
                + "(tls.min_version is 1.3)")

        let plain = try await TestReceiver()
        let https = plain.url.replacingOccurrences(of: "http://", with: "https://")
        #expect(try await Self.failure(https, tls: client).description
            == "TLS handshake failed: \(try Self.remote(plain)) does not speak TLS "
                + "(is the URL's https:// meant to be http://?)")
        let http = mutual.url.replacingOccurrences(of: "https://", with: "http://")
        #expect(try await Self.failure(http).description
            == "\(try Self.remote(mutual)) closed the connection before answering")
    }

    @Test("a remote that closes in the middle of its answer's head: closed the connection before the response ended")
    func closedMidHeaders() async throws {
        let server = try AnsweringServer(answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Half")
        let error = try await Self.failure("http://127.0.0.1:\(server.port)/ingest")
        #expect(error.description == "127.0.0.1:\(server.port) closed the connection before the response ended")
        #expect(error.fault == .remoteUnavailable)
        let midBody = try AnsweringServer(answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        #expect(try await Self.failure("http://127.0.0.1:\(midBody.port)/ingest").description
            == "127.0.0.1:\(midBody.port) closed the connection before the response ended")
    }

    @Test("a redirect names its Location and the key to change; it is not followed")
    func redirect() async throws {
        let server = try AnsweringServer(
            answer: "HTTP/1.1 307 Temporary Redirect\r\nLocation: https://logs.example/v2/ingest\r\n"
                + "Content-Length: 5\r\n\r\nmoved")
        let error = try await Self.failure("http://127.0.0.1:\(server.port)/ingest")
        #expect(error.description
            == "HTTP 307 to https://logs.example/v2/ingest (redirects are not followed: set upload.url): moved")
        #expect(error.fault == .endpointRefused)
        let bare = try AnsweringServer(answer: "HTTP/1.1 301 Moved Permanently\r\nContent-Length: 0\r\n\r\n")
        #expect(try await Self.failure("http://127.0.0.1:\(bare.port)/ingest").description == "HTTP 301")
    }
}

/// A listening socket on 127.0.0.1 at a port the kernel chose.
private func loopbackListener() throws -> (descriptor: Int32, port: Int) {
    let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = listening >= 0 && withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listening, $0, length) == 0 && getsockname(listening, $0, &length) == 0
        }
    }
    guard bound, listen(listening, 8) == 0 else {
        let reason = String(cString: strerror(errno))
        if listening >= 0 { close(listening) }
        throw WaitTimeout(description: "no listening socket: \(reason)")
    }
    return (listening, Int(UInt16(bigEndian: address.sin_port)))
}

/// A loopback listener whose connections are served one at a time on a thread of its own, until deinit.
class LoopbackServer: @unchecked Sendable {
    // @unchecked: both stored properties are set once, in init.
    let port: Int
    private let descriptor: Int32

    /// - Parameter serve: Serves one accepted connection and closes it.
    init(serving serve: @escaping @Sendable (Int32) -> Void) throws {
        let (listening, port) = try loopbackListener()
        descriptor = listening
        self.port = port
        Thread.detachNewThread {
            while true {
                let connection = accept(listening, nil, nil)
                guard connection >= 0 else {
                    // Shut down: the test is over. Closed here, where nothing uses it any more: closed by the
                    // deinit while this thread served a connection, its number could be another socket's by the
                    // next accept.
                    close(listening)
                    return
                }
                // Each on a thread of its own: in a full run a stray client (another test's daemon retrying a port
                // that was its receiver's) may connect here and send nothing, and serving it here would leave the
                // test's own request unread until its timeout (seen once in a CI run).
                Thread.detachNewThread { serve(connection) }
            }
        }
    }

    deinit {
        // Wakes the accept thread, which closes the socket.
        shutdown(descriptor, Int32(SHUT_RDWR))
    }
}

/// A loopback server that reads a request, writes `answer` and closes the connection, as a remote that breaks
/// off (or redirects) does.
final class AnsweringServer: LoopbackServer, @unchecked Sendable {
    init(answer: String) throws {
        let bytes = Array(answer.utf8)
        try super.init { connection in
            var buffer = [UInt8](repeating: 0, count: 65536)
            _ = read(connection, &buffer, buffer.count)
            _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            // The answer ends with the end of the stream. What the client still sends (a body the first read did
            // not take) is read to its end before the close: closed unread, it would make the kernel reset the
            // connection, a different failure.
            shutdown(connection, Int32(SHUT_WR))
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            while read(connection, &buffer, buffer.count) > 0 {}
            close(connection)
        }
    }
}

/// A loopback server that reads a request and resets the connection (`SO_LINGER` 0), as a crashing or
/// overloaded remote's kernel does.
final class ResettingServer: LoopbackServer, @unchecked Sendable {
    init() throws {
        try super.init { connection in
            var buffer = [UInt8](repeating: 0, count: 65536)
            _ = read(connection, &buffer, buffer.count)
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
            close(connection)
        }
    }
}
