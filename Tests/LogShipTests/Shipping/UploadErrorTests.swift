import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

@Suite("Upload failures")
struct UploadErrorTests {
    @Test("each status says what it means for the batch", arguments: [
        (408, UploadError.Fault.remoteUnavailable), (429, .remoteUnavailable), (500, .remoteUnavailable),
        (503, .remoteUnavailable), (599, .remoteUnavailable),
        (301, .endpointRefused), (308, .endpointRefused), (401, .endpointRefused), (403, .endpointRefused),
        (404, .endpointRefused), (405, .endpointRefused), (407, .endpointRefused), (410, .endpointRefused),
        (421, .endpointRefused), (426, .endpointRefused),
        (400, .recordsRefused), (413, .recordsRefused), (415, .recordsRefused), (422, .recordsRefused),
        (409, .unclear), (418, .unclear), (451, .unclear),
    ])
    func classification(status: Int, fault: UploadError.Fault) {
        #expect(UploadError.status(status, responseExcerpt: "").fault == fault)
    }

    @Test("a credential a remote echoes into its answer is redacted before it reaches a log line or a dead letter")
    func redaction() {
        let secrets = ["s3cret", "dXNlcjpzM2NyZXQ=", "", "Bearer abc"]
        #expect(HTTPUploader.redacting(secrets, in: "bad token s3cret in Basic dXNlcjpzM2NyZXQ= / Bearer abc")
            == "bad token [redacted] in Basic [redacted] / [redacted]")
        #expect(HTTPUploader.redacting([], in: "unchanged") == "unchanged")
    }

    @Test("transport errors and timeouts mean the remote is unavailable")
    func transport() {
        #expect(UploadError.transport("connection refused").fault == .remoteUnavailable)
        #expect(UploadError.timeout("timed out after 10s connecting to 127.0.0.1:8514").fault == .remoteUnavailable)
    }

    @Test("Retry-After is read as seconds or as an HTTP date, however large")
    func retryAfter() throws {
        let now = Date(timeIntervalSince1970: 1_795_255_200)
        #expect(HTTPUploader.retryAfterSeconds("2", now: now) == 2)
        #expect(HTTPUploader.retryAfterSeconds(" 120 ", now: now) == 120)
        #expect(HTTPUploader.retryAfterSeconds("9223372036854775807", now: now) == Double(Int64.max))
        #expect(HTTPUploader.retryAfterSeconds("99999999999999999999999999", now: now)! > 1e25)
        #expect(HTTPUploader.retryAfterSeconds("Sat, 21 Nov 2026 10:00:30 GMT", now: now) == 30)
        #expect(HTTPUploader.retryAfterSeconds("Sat, 21 Nov 2026 09:00:00 GMT", now: now) == 0, "a date past is now")
        #expect(HTTPUploader.retryAfterSeconds("soon", now: now) == nil)
        #expect(HTTPUploader.retryAfterSeconds("-5", now: now) == nil)
        #expect(HTTPUploader.retryAfterSeconds("", now: now) == nil)
    }
}
