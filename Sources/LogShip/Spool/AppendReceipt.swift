/// The outcome of ``Spool/append(_:position:evicting:)``.
public struct AppendReceipt: Hashable, Sendable {
    public var accepted: Int
    /// Older records evicted to make room for these.
    public var evicted: Int
    /// Entries not stored because no room could be made for them; ``refusal`` says why.
    public var refused: Int
    /// Entries not stored, because they did not fit without evicting and the caller did not allow evicting; none
    /// of the group is stored then, nor its position.
    public var deferred: Int
    /// Why entries were refused (the first reason, should there be several).
    public var refusal: SpoolRefusal?

    public init(
        accepted: Int = 0, evicted: Int = 0, refused: Int = 0, deferred: Int = 0, refusal: SpoolRefusal? = nil
    ) {
        self.accepted = accepted
        self.evicted = evicted
        self.refused = refused
        self.deferred = deferred
        self.refusal = refusal
    }
}
