/// Sends one encoded batch to the remote.
///
/// ``HTTPUploader`` is the real one; tests of the operation machinery may use their own.
public protocol Uploader: Sendable {
    /// Sends `body` and returns when the remote has accepted it.
    ///
    /// - Throws: ``UploadError`` when the remote refused it or could not be reached, `CancellationError` when the
    ///   calling task was cancelled.
    func upload(_ body: [UInt8], recordCount: Int) async throws
}
