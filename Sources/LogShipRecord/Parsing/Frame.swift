/// One record's raw bytes, cut out of a stream or taken from a datagram.
public struct Frame: Hashable, Sendable {
    /// The record's bytes, never more than the configured maximum record size.
    public var bytes: [UInt8]
    /// Whether bytes past the size limit were dropped.
    public var truncated: Bool

    public init(bytes: [UInt8], truncated: Bool = false) {
        self.bytes = bytes
        self.truncated = truncated
    }
}
