import Synchronization

/// Batches a remote refused whole with an unclear 4xx, and how often: the next look at one splits it finer.
///
/// A refusal that is the records' fault shows when the remote takes some parts of a batch and not others. Trying
/// only halves cannot tell when bad records sit in both; so each time the same batch (by its first record) is
/// refused in every part, it is tried in twice as many parts the next time, until some part gets through or the
/// parts are single records. Shared by every operation of one shipper.
final class UnclearRefusals: Sendable {
    /// More than this many remembered batches means the remote refuses everything for a long while; starting
    /// over costs only some finer splitting.
    private static let capacity = 10_000

    private let refusedWhole = Mutex<[Int64: Int]>([:])

    /// How finely to split `batch`: its parts number `2^depth`.
    func depth(of batch: Batch) -> Int {
        guard let first = batch.records.first?.sequence else { return 1 }
        return min(1 + refusedWhole.withLock { $0[first, default: 0] }, 62)
    }

    /// `batch` was refused in every part.
    func remember(_ batch: Batch) {
        guard let first = batch.records.first?.sequence else { return }
        refusedWhole.withLock { refusedWhole in
            if refusedWhole.count >= Self.capacity { refusedWhole.removeAll() }
            refusedWhole[first, default: 0] += 1
        }
    }

    /// Some part of `batch` got through: it is judged record by record from now on.
    func forget(_ batch: Batch) {
        guard let first = batch.records.first?.sequence else { return }
        refusedWhole.withLock { _ = $0.removeValue(forKey: first) }
    }
}
