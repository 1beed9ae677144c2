import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Posts NDJSON batches with async-http-client over keep-alive connections.
public final class HTTPUploader: Uploader {
    /// Where and how to post.
    public struct Configuration: Sendable {
        public var url: String
        public var headers: [(String, String)]
        public var timeout: Duration
        /// A file holding a bearer token (`auth.bearer_token_file`), read again when it changes.
        public var bearerTokenFile: String?

        public init(
            url: String, headers: [(String, String)] = [], timeout: Duration = .seconds(10), bearerTokenFile: String? = nil
        ) {
            self.url = url
            self.headers = headers
            self.timeout = timeout
            self.bearerTokenFile = bearerTokenFile
        }
    }

    private static let excerptLimit = 512

    private let client: HTTPClient
    /// What a reload may change; each request reads it once.
    private let settings: Mutex<(configuration: Configuration, bearerToken: SecretFile?)>

    /// - Parameters:
    ///   - client: The client to send with; its connection pool should allow `max_in_flight` connections.
    ///   - configuration: URL, extra headers and timeout.
    public init(client: HTTPClient, configuration: Configuration) {
        self.client = client
        settings = Mutex((configuration, configuration.bearerTokenFile.map(SecretFile.init(path:))))
    }

    /// Uses `configuration` from the next request on (a reload); requests in flight finish as they began.
    public func update(_ configuration: Configuration) {
        let bearerToken = configuration.bearerTokenFile.map(SecretFile.init(path:))
        settings.withLock { $0 = (configuration, bearerToken) }
    }

    /// Posts `payload`, the whole exchange (connection, request, response head and body) bounded by the
    /// configured timeout.
    ///
    /// async-http-client's own deadline stops applying once the response head has arrived, so a remote that
    /// sends headers and then stalls its body would hold a request slot forever; the bound here covers all of it.
    /// A 2xx answer whose body then stalls is a timeout (the batch is sent again: the exchange never completed);
    /// any other status keeps its meaning, since the body only adds an excerpt to it.
    public func upload(_ payload: Payload) async throws {
        let (configuration, bearerToken) = settings.withLock { $0 }
        let head = Mutex<Int?>(nil)
        do {
            try await Self.withDeadline(configuration.timeout) {
                try await self.post(payload, configuration: configuration, bearerToken: bearerToken, head: head)
            }
        } catch let error as UploadError where error == .timeout {
            if let status = head.withLock({ $0 }), !(200...299).contains(status) {
                throw UploadError.status(status, responseExcerpt: "(response body timed out)")
            }
            throw error
        }
    }

    /// Sends the request; `head` receives the status as soon as the response head is in.
    private func post(
        _ payload: Payload, configuration: Configuration, bearerToken: SecretFile?, head: borrowing Mutex<Int?>
    ) async throws {
        var request = HTTPClientRequest(url: configuration.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-ndjson")
        request.headers.add(name: "X-Logshipd-Records", value: String(payload.recordCount))
        request.headers.add(name: "X-Logshipd-Batch", value: String(payload.batchNumber))
        for (name, value) in configuration.headers {
            request.headers.replaceOrAdd(name: name, value: value)
        }
        if let token = try bearerToken?.read(), !token.isEmpty {
            request.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)")
        }
        request.body = .bytes(ByteBuffer(bytes: payload.body))

        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: TimeAmount(configuration.timeout))
        } catch {
            throw Self.translate(error)
        }
        let status = Int(response.status.code)
        head.withLock { $0 = status }
        let excerpt: String
        do {
            excerpt = try await Self.excerpt(of: response.body)
        } catch {
            throw Self.translate(error)
        }
        guard (200...299).contains(status) else {
            throw UploadError.status(
                status,
                responseExcerpt: excerpt,
                retryAfter: response.headers.first(name: "Retry-After").flatMap { Self.retryAfterSeconds($0) })
        }
    }

    /// Runs `body`, cancelling it and throwing ``UploadError/timeout`` when it has not finished within `timeout`.
    /// A cancellation of the calling task stays a `CancellationError`.
    static func withDeadline(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw UploadError.timeout
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Reads at most ``excerptLimit`` bytes of the body and drains the rest, so the connection can be reused.
    private static func excerpt(of body: HTTPClientResponse.Body) async throws -> String {
        var excerpt: [UInt8] = []
        for try await chunk in body where excerpt.count < excerptLimit {
            excerpt.append(contentsOf: chunk.readableBytesView.prefix(excerptLimit - excerpt.count))
        }
        return String(decoding: excerpt, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Maps client errors to ``UploadError``; cancellation stays cancellation.
    private static func translate(_ error: any Error) -> any Error {
        if error is CancellationError { return error }
        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .cancelled: return CancellationError()
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout: return UploadError.timeout
            default: return UploadError.transport(String(describing: clientError))
            }
        }
        return UploadError.transport(String(describing: error))
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
