import Foundation
import Testing

@testable import LogShip

@Suite("Upload failures")
struct UploadErrorTests {
    @Test("transport errors, timeouts, 408, 429 and 5xx are retried; other statuses are permanent", arguments: [
        (408, true), (429, true), (500, true), (503, true), (599, true),
        (400, false), (401, false), (404, false), (413, false), (422, false),
    ])
    func classification(status: Int, retryable: Bool) {
        #expect(UploadError.status(status, responseExcerpt: "").isRetryable == retryable)
    }

    @Test("transport errors and timeouts are retried")
    func transport() {
        #expect(UploadError.transport("connection refused").isRetryable)
        #expect(UploadError.timeout.isRetryable)
    }

    @Test("Retry-After is read as seconds or as an HTTP date")
    func retryAfter() throws {
        let now = Date(timeIntervalSince1970: 1_795_255_200)
        #expect(HTTPUploader.retryAfterDate("2", now: now) == now.addingTimeInterval(2))
        #expect(HTTPUploader.retryAfterDate(" 120 ", now: now) == now.addingTimeInterval(120))
        let date = try #require(HTTPUploader.retryAfterDate("Sat, 21 Nov 2026 10:00:30 GMT", now: now))
        #expect(date == now.addingTimeInterval(30))
        #expect(HTTPUploader.retryAfterDate("soon", now: now) == nil)
        #expect(HTTPUploader.retryAfterDate("-5", now: now) == nil)
    }

    @Test("backoff grows exponentially to its cap, with full jitter below the ceiling")
    func backoff() {
        let backoff = RetryBackoff(initial: .milliseconds(100), maximum: .seconds(2))
        #expect(backoff.ceiling(afterFailures: 1) == .milliseconds(100))
        #expect(backoff.ceiling(afterFailures: 3) == .milliseconds(400))
        #expect(backoff.ceiling(afterFailures: 10) == .seconds(2))
        for _ in 0..<100 {
            #expect(backoff.nextDelay() <= .seconds(2))
        }
        backoff.reset()
        #expect(backoff.nextDelay() <= .milliseconds(100))
    }
}
