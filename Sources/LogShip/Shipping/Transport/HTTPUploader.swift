import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// Posts batches over keep-alive connections (``UploadClient``), in the configured format, compressed,
/// authenticated and over TLS as configured.
public final class HTTPUploader: Uploader {
    /// Where and how to post.
    public struct Configuration: Sendable {
        public var url: String
        public var headers: [(String, String)]
        public var timeout: Duration
        public var format: UploadFormat
        /// How bodies are compressed (`Content-Encoding`).
        public var compression: UploadCompression
        /// A file holding a bearer token (`auth.bearer_token_file`), read again when it changes.
        public var bearerTokenFile: String?
        /// A user and a file holding the password (`auth.basic_user`, `auth.basic_password_file`).
        public var basicAuthentication: (user: String, passwordFile: String)?
        /// For `https` URLs: trust, client certificate, minimum version; `nil` uses the system's trust store.
        public var tls: TLSConfiguration?
        /// Where trust comes from, for the log line a failed handshake gets (`tls.ca_file`, or the system store).
        public var trustDescription: String
        /// The host to connect to when the URL names another (`tls.server_name`: the URL names the server the
        /// certificate and SNI are checked against).
        public var connectHost: String?

        public init(
            url: String, headers: [(String, String)] = [], timeout: Duration = .seconds(10),
            format: UploadFormat = .ndjson, compression: UploadCompression = .none, bearerTokenFile: String? = nil,
            basicAuthentication: (user: String, passwordFile: String)? = nil,
            tls: TLSConfiguration? = nil, trustDescription: String = "the system trust store",
            connectHost: String? = nil
        ) {
            self.connectHost = connectHost
            self.url = url
            self.headers = headers
            self.timeout = timeout
            self.format = format
            self.compression = compression
            self.bearerTokenFile = bearerTokenFile
            self.basicAuthentication = basicAuthentication
            self.tls = tls
            self.trustDescription = trustDescription
        }
    }

    /// A configuration prepared for requests: its encoder, headers and secret files, and the clients that post to
    /// its URL, one per loop. A class: each request takes the one in force, which then costs a reference, not a copy.
    final class PreparedConfiguration: Sendable {
        let configuration: Configuration
        let url: String
        let encoder: any RecordEncoder
        let bearerToken: SecretFile?
        let basicPassword: SecretFile?
        /// One per upload loop, in the order of the loops.
        let clients: [UploadClient]
        /// The headers every request carries: the format's `Content-Type` and `upload.headers`, which win over
        /// ours (`Host` and `Content-Length` aside, which the client sets).
        let headers: HTTPHeaders
        /// Whether `upload.headers` leaves `X-Logshipd-Records` and `X-Logshipd-Batch` to each request.
        let sendsRecordCount: Bool
        let sendsBatchNumber: Bool
        /// Whether `upload.headers` leaves `Idempotency-Key` to each request: the same for the same records.
        let sendsIdempotencyKey: Bool
        /// Configured `Authorization` values: what a remote might echo back into an error message.
        let configuredSecrets: [String]

        /// - Parameter current: The configuration in use, whose clients are kept when the URL and TLS are unchanged.
        /// - Throws: ``ConfigurationError`` for a URL that is not http(s) with a host, or TLS settings NIOSSL
        ///   refuses (the loader has checked both).
        init(
            _ configuration: Configuration, replacing current: PreparedConfiguration? = nil, eventLoops: [any EventLoop]
        ) throws {
            self.configuration = configuration
            encoder = configuration.format.encoder
            var headers = HTTPHeaders([("Content-Type", encoder.contentType)])
            for (name, value) in configuration.headers where !["host", "content-length"].contains(name.lowercased()) {
                headers.replaceOrAdd(name: name, value: value)
            }
            self.headers = headers
            sendsRecordCount = !headers.contains(name: "X-Logshipd-Records")
            sendsBatchNumber = !headers.contains(name: "X-Logshipd-Batch")
            sendsIdempotencyKey = !headers.contains(name: "Idempotency-Key")
            configuredSecrets = configuration.headers.filter { $0.0.lowercased() == "authorization" }.map(\.1)
            url = Self.url(configuration.url, defaultPath: encoder.defaultPath)
            bearerToken = configuration.bearerTokenFile.map(SecretFile.init(path:))
            basicPassword = configuration.basicAuthentication.map { SecretFile(path: $0.passwordFile) }
            if let current, current.sharesConnections(with: url, configuration) {
                clients = current.clients
                return
            }
            guard let endpoint = UploadEndpoint(url: url, connectHost: configuration.connectHost) else {
                throw ConfigurationError("upload.url: not an http:// or https:// URL with a host")
            }
            do {
                // One TLS context serves every loop's connections.
                let tls = endpoint.usesTLS
                    ? try NIOSSLContext(configuration: configuration.tls ?? .makeClientConfiguration()) : nil
                clients = eventLoops.map { UploadClient(endpoint: endpoint, tls: tls, eventLoop: $0) }
            } catch {
                throw ConfigurationError("tls: \(error)")
            }
        }

        /// The client of upload lane `lane` (``UploadLoops``): the connection on its loop.
        func client(forLane lane: Int) -> UploadClient {
            clients[lane % clients.count]
        }

        /// Whether a request to `url` with `configuration` may use this configuration's connections: same address,
        /// same TLS.
        func sharesConnections(with url: String, _ configuration: Configuration) -> Bool {
            guard url == self.url, configuration.connectHost == self.configuration.connectHost else { return false }
            switch (configuration.tls, self.configuration.tls) {
            case (nil, nil): return true
            case (let new?, let old?): return new.bestEffortEquals(old)
            default: return false
            }
        }

        /// `url`, with the format's path when it names none.
        static func url(_ url: String, defaultPath: String) -> String {
            guard var components = URLComponents(string: url), components.path.isEmpty || components.path == "/" else {
                return url
            }
            components.path = defaultPath
            return components.string ?? url
        }
    }

    private static let excerptLimit = 512

    private let eventLoops: [any EventLoop]
    /// What a reload may change; each request reads it once.
    private let prepared: Mutex<PreparedConfiguration>

    /// - Parameters:
    ///   - configuration: Where and how to post.
    ///   - eventLoops: Where the connections live, each loop with its own: a request goes out on the connection of
    ///     its payload's lane (``Payload/lane``, ``UploadLoops``).
    /// - Throws: ``ConfigurationError`` for a URL or TLS settings that cannot be used.
    public init(configuration: Configuration, eventLoops: [any EventLoop]) throws {
        precondition(!eventLoops.isEmpty, "uploads need a loop")
        self.eventLoops = eventLoops
        prepared = Mutex(try PreparedConfiguration(configuration, eventLoops: eventLoops))
    }

    /// Checks `configuration` for a reload and prepares it, keeping the connections unless the URL or TLS changed;
    /// nothing changes until ``use(_:)``. Checked apart, so that a reload of several endpoints applies to all or none.
    ///
    /// - Throws: ``ConfigurationError`` for a URL or TLS settings that cannot be used.
    func prepare(_ configuration: Configuration) throws -> PreparedConfiguration {
        // Built outside the lock (a TLS context may read the trust store); reloads come one at a time.
        try PreparedConfiguration(configuration, replacing: prepared.withLock { $0 }, eventLoops: eventLoops)
    }

    /// Uses a configuration from ``prepare(_:)`` from the next request on (a reload). Requests that began with the
    /// old one finish on its connections, which close after if the new one has others.
    func use(_ new: PreparedConfiguration) {
        let old = prepared.withLock { current in
            defer { current = new }
            return current
        }
        // A new URL or TLS replaces every loop's client at once; each old one closes its connections.
        if !old.clients.elementsEqual(new.clients, by: ===) {
            for client in old.clients { client.retire() }
        }
    }

    /// Closes the connections; uploads fail from then on.
    public func shutdown() {
        for client in prepared.withLock({ $0 }).clients { client.shutdown() }
    }

    /// Posts `payload`, the whole exchange (connection, request, response head and body) bounded by the
    /// configured timeout.
    ///
    /// A 2xx answer whose body then stalls is a timeout (the batch is sent again: the exchange never completed);
    /// any other status keeps its meaning, since the body only adds an excerpt to it. A batch the format cannot
    /// write (a spooled line that is not a record's line) fails with ``UploadError/unencodable(_:)`` before anything
    /// is sent.
    public func upload(_ payload: Payload) async throws -> Int {
        let prepared = self.prepared.withLock { $0 }
        let configuration = prepared.configuration
        var headers = prepared.headers
        // Room for what this request adds, so that adding copies the shared headers once.
        headers.reserveCapacity(headers.count + 5)
        if prepared.sendsRecordCount { headers.add(name: "X-Logshipd-Records", value: String(payload.recordCount)) }
        if prepared.sendsBatchNumber { headers.add(name: "X-Logshipd-Batch", value: String(payload.batchNumber)) }
        if prepared.sendsIdempotencyKey { headers.add(name: "Idempotency-Key", value: payload.ids.idempotencyKey) }
        // What a remote might echo back into an error message, a log line or a dead letter's reason.
        var secrets = prepared.configuredSecrets
        if let token = try prepared.bearerToken?.read(), !token.isEmpty {
            headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)")
            secrets.append(token)
        }
        if let user = configuration.basicAuthentication?.user, let password = try prepared.basicPassword?.read() {
            let credentials = Data("\(user):\(password)".utf8).base64EncodedString()
            headers.replaceOrAdd(name: "Authorization", value: "Basic \(credentials)")
            secrets += [password, credentials]
        }
        var body: ByteBuffer
        do {
            body = try prepared.encoder.encodeBuffer(payload.lines, ids: payload.ids)
        } catch {
            throw UploadError.unencodable("cannot encode the batch as \(configuration.format.rawValue): \(error)")
        }
        if let encoding = configuration.compression.contentEncoding {
            body = try configuration.compression.compress(body)
            headers.add(name: "Content-Encoding", value: encoding)
        }

        let bodyBytes = body.readableBytes
        // Read past the limit by the longest secret, so that one crossing the cut is still found whole.
        let margin = secrets.map(\.utf8.count).max() ?? 0
        let client = prepared.client(forLane: payload.lane)
        let response: UploadResponse
        do {
            response = try await client.post(
                headers: headers, body: body, timeout: TimeAmount(configuration.timeout),
                excerptLimit: Self.excerptLimit + margin)
        } catch UploadClientError.timedOut(let status?) where !(200...299).contains(status) {
            throw UploadError.status(status, responseExcerpt: "(response body timed out)")
        } catch {
            throw Self.translate(error, FailureContext(endpoint: client.endpoint, configuration: configuration))
        }
        guard (200...299).contains(response.status) else {
            let read = String(decoding: response.excerpt, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw UploadError.status(
                response.status,
                responseExcerpt: String(Self.redacting(secrets, in: read).prefix(Self.excerptLimit)),
                retryAfter: response.head.headers.first(name: "Retry-After").flatMap { Self.retryAfterSeconds($0) },
                location: (300...399).contains(response.status) ? response.head.headers.first(name: "Location") : nil)
        }
        return bodyBytes
    }

    /// `text` with every non-empty secret in it replaced by `[redacted]`.
    static func redacting(_ secrets: [String], in text: String) -> String {
        secrets.filter { !$0.isEmpty }.sorted { $0.count > $1.count }.reduce(text) {
            $0.replacingOccurrences(of: $1, with: "[redacted]")
        }
    }

    /// `Retry-After` as seconds to wait: delay seconds, or an HTTP date (RFC 9110 section 10.2.3) less `now`.
    ///
    /// Read as a `Double`, so that `99999999999999999999` is a very long wait (which the caller caps), not a
    /// parse failure or an overflow.
    static func retryAfterSeconds(_ value: String, now: Date = Date()) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            return Double(trimmed)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: trimmed).map { max($0.timeIntervalSince(now), 0) }
    }
}
