/// The outcome of ``Spool/append(_:)``.
public struct AppendReceipt: Hashable, Sendable {
    public var accepted: Int
    public var evicted: Int
    public var refused: Int

    public init(accepted: Int = 0, evicted: Int = 0, refused: Int = 0) {
        self.accepted = accepted
        self.evicted = evicted
        self.refused = refused
    }
}
