import NIOHTTP1

/// What the remote answered to an upload: the response head and the start of the body.
struct UploadResponse: Sendable {
    var head: HTTPResponseHead
    /// The first bytes of the body, at most the limit the request asked for.
    var excerpt: [UInt8]

    var status: Int { Int(head.status.code) }
}
