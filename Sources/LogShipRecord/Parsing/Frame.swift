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

    /// Whether the frame holds nothing but whitespace, line endings and NULs: no record at all. Intake drops such
    /// frames and counts them, so that a stream of newlines cannot become a spool of empty records.
    public var isBlank: Bool {
        bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C, 0: true
            default: false
            }
        }
    }
}
