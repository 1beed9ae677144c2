import Foundation

/// What a claim found.
public enum ClaimResult: Hashable, Sendable {
    /// A batch; `moreReady` says whether ready records of the class remain unclaimed.
    case batch(Batch, moreReady: Bool)
    /// The class's oldest record waits for a retry time: nothing of the class goes before it.
    case waiting(until: Date)
    /// The class holds no unclaimed records.
    case empty
}
