/// What a claim found.
public enum ClaimResult: Hashable, Sendable {
    /// A batch; `moreLeft` says whether records of the class remain unclaimed (the class's next operation should
    /// be waiting to claim them).
    case batch(Batch, moreLeft: Bool)
    /// The class holds no unclaimed records.
    case empty
}
