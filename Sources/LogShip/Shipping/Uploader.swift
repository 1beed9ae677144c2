/// Sends one encoded batch to the remote.
///
/// ``HTTPUploader`` is the real one; tests of the operation machinery may use their own.
public protocol Uploader: Sendable {
    /// Sends `payload` and returns when the remote has accepted it.
    ///
    /// - Throws: ``UploadError`` when the remote refused it or could not be reached, `CancellationError` when the
    ///   calling task was cancelled.
    func upload(_ payload: Payload) async throws
}

/// One request's body and what the remote is told about it.
public struct Payload: Sendable {
    /// The NDJSON body.
    public var body: [UInt8]
    public var recordCount: Int
    /// The claim this request carries, numbered in claim order since the daemon started; the halves of a refused
    /// batch keep their batch's number. Sent as `X-Logshipd-Batch`, so a receiver can tell claim order from
    /// arrival order and spot a retried batch.
    public var batchNumber: Int

    public init(body: [UInt8], recordCount: Int, batchNumber: Int) {
        self.body = body
        self.recordCount = recordCount
        self.batchNumber = batchNumber
    }
}
