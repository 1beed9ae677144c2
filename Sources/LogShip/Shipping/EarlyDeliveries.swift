/// Counts the first batches the remote accepted records of (one delivery report each, however many requests a
/// batch took), and hands out a call after the 1st, the 10th and the 100th (``milestones``): one-time work turns
/// up all through a daemon's first deliveries (the first delivery, the first acknowledgements committed, the first
/// chunk read back), a decade at a time.
struct EarlyDeliveries: Sendable {
    static let milestones = [1, 10, 100]

    /// What is called at each milestone; `nil` for nothing.
    let call: (@Sendable () -> Void)?
    /// Batches accepted so far, counted up to the last milestone.
    private(set) var accepted = 0

    init(call: (@Sendable () -> Void)?) {
        self.call = call
    }

    /// Counts one batch the remote accepted records of; returns the call if that batch is a milestone.
    mutating func countAccepted() -> (@Sendable () -> Void)? {
        guard call != nil, accepted < Self.milestones.last! else { return nil }
        accepted += 1
        return Self.milestones.contains(accepted) ? call : nil
    }
}
