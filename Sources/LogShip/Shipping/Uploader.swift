/// Sends one encoded batch to the remote.
///
/// ``HTTPUploader`` is the real one; tests of the operation machinery may use their own.
public protocol Uploader: Sendable {
    /// Sends `payload` and returns when the remote has accepted it.
    ///
    /// - Returns: The request body's size as sent (encoded and compressed): what the link's budget is spent by.
    /// - Throws: ``UploadError`` when the remote refused it or could not be reached, `CancellationError` when the
    ///   calling task was cancelled.
    func upload(_ payload: Payload) async throws -> Int
}

/// One request's records and what the remote is told about them.
public struct Payload: Sendable {
    /// The records in the spool's canonical form, one NDJSON line each (without newlines); the uploader encodes
    /// them in its format.
    public var lines: [ArraySlice<UInt8>]
    /// The records' ids, in the order of ``lines``: sent with each record, and digested into the request's
    /// `Idempotency-Key`.
    public var ids: RecordIDs
    public var recordCount: Int { lines.count }
    /// The claim this request carries, numbered in claim order since the daemon started; the halves of a refused
    /// batch keep their batch's number. Sent as `X-Logshipd-Batch`, so a receiver can tell claim order from
    /// arrival order and spot a retried batch.
    public var batchNumber: Int
    /// The upload lane of the operation sending it (``UploadLoops``): the connection of that lane's loop carries
    /// it. 0 outside an operation.
    public var lane: Int

    public init(lines: [ArraySlice<UInt8>], ids: RecordIDs, batchNumber: Int, lane: Int = 0) {
        precondition(lines.count == ids.sequences.count, "one id per record")
        self.lines = lines
        self.ids = ids
        self.batchNumber = batchNumber
        self.lane = lane
    }
}
