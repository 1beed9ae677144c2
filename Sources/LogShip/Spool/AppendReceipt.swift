/// The outcome of ``Spool/append(_:position:evicting:)``.
public struct AppendReceipt: Hashable, Sendable {
    public var accepted: Int
    public var evicted: Int
    public var refused: Int
    /// Entries not stored, because they did not fit without evicting and the caller did not allow evicting; none
    /// of the group is stored then, nor its position.
    public var deferred: Int

    public init(accepted: Int = 0, evicted: Int = 0, refused: Int = 0, deferred: Int = 0) {
        self.accepted = accepted
        self.evicted = evicted
        self.refused = refused
        self.deferred = deferred
    }
}
