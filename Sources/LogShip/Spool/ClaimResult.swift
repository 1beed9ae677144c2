import Foundation

/// What a claim found.
public enum ClaimResult: Hashable, Sendable {
    /// A batch; `moreLeft` says whether records of the class remain unclaimed, ready now or waiting for their retry
    /// time (either way the class's next operation should be waiting, to claim them or learn how long to wait).
    case batch(Batch, moreLeft: Bool)
    /// The class's oldest record waits for a retry time: nothing of the class goes before it.
    case waiting(until: Date)
    /// The class holds no unclaimed records.
    case empty
}
