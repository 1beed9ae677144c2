/// How large one request may be.
public struct BatchLimits: Hashable, Sendable {
    public var maxRecords: Int
    public var maxBytes: Int

    public init(maxRecords: Int, maxBytes: Int) {
        precondition(maxRecords > 0 && maxBytes > 0)
        self.maxRecords = maxRecords
        self.maxBytes = maxBytes
    }
}
