import NIOCore
import NIOHTTP1

/// One POST as ``UploadClient`` sends it: the head and body, and the bounds of its exchange.
struct UploadRequest: Sendable {
    var head: HTTPRequestHead
    var body: ByteBuffer
    /// How much of the response body to keep; the rest is read and dropped.
    var excerptLimit: Int
    /// When the whole exchange, connecting and the response body included, must be over.
    var deadline: NIODeadline
}
