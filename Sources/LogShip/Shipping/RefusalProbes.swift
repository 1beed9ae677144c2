import Synchronization

/// Batches a remote refused whole with an unclear 4xx (neither the records' fault, like 400, nor the endpoint's,
/// like 404) while their parts are sent on their own to tell which it is.
///
/// If the remote takes any part, the records were at fault, and the refused parts are isolated as refused
/// records. If it refuses every part, the endpoint refuses: nothing is dead-lettered and delivery pauses. Trying
/// only halves cannot tell when bad records sit in both; so each time the same batch (by its first record) is
/// refused in every part, it is tried in twice as many parts the next time, until some part gets through or the
/// parts are single records. Shared by every operation of one shipper.
final class RefusalProbes: Sendable {
    /// Names one probe of one batch.
    struct ProbeID: Hashable, Sendable {
        fileprivate let rawValue: UInt64
    }

    /// What a probe came to once every part has been heard of.
    enum Verdict: Sendable {
        /// The remote took some part: these parts were refused for their records.
        case recordsRefused([(part: Batch, error: UploadError)])
        /// The remote refused every part: these parts, still claimed, go back, and delivery pauses.
        case endpointRefuses([Batch], UploadError)
        /// Some part met a failure of the link, and none was taken: these refused parts go back, judged later.
        case undecided([Batch])
    }

    /// More than this many remembered batches means the remote refuses everything for a long while; starting
    /// over costs only some finer splitting.
    private static let capacity = 10_000

    private struct Probe {
        var batch: Batch
        var outstanding: Int
        var anyAccepted = false
        var anyWithdrawn = false
        var refused: [(part: Batch, error: UploadError)] = []
    }

    private struct State {
        var probes: [ProbeID: Probe] = [:]
        /// How often each batch, by its first record, was refused in every part.
        var refusedWhole: [Int64: Int] = [:]
        var lastID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Starts a probe of `batch`, which has more than one record: its parts, in order, each to be sent alone.
    func begin(_ batch: Batch) -> (ProbeID, [Batch]) {
        state.withLock { state in
            let depth = batch.records.first.map { min(1 + state.refusedWhole[$0.sequence, default: 0], 62) } ?? 1
            let parts = batch.parts(1 << depth)
            state.lastID += 1
            let id = ProbeID(rawValue: state.lastID)
            state.probes[id] = Probe(batch: batch, outstanding: parts.count)
            return (id, parts)
        }
    }

    /// The remote took a part of probe `id`.
    func partAccepted(_ id: ProbeID) -> Verdict? {
        hear(id) { $0.anyAccepted = true }
    }

    /// The remote refused `part` of probe `id` for something other than the link; it stays claimed until the
    /// verdict.
    func partRefused(_ id: ProbeID, _ part: Batch, _ error: UploadError) -> Verdict? {
        hear(id) { $0.refused.append((part, error)) }
    }

    /// A part of probe `id` met a failure of the link, or was cancelled, and went back to the spool.
    func partWithdrawn(_ id: ProbeID) -> Verdict? {
        hear(id) { $0.anyWithdrawn = true }
    }

    private func hear(_ id: ProbeID, _ change: (inout Probe) -> Void) -> Verdict? {
        state.withLock { state in
            guard var probe = state.probes[id] else { return nil }
            change(&probe)
            probe.outstanding -= 1
            guard probe.outstanding == 0 else {
                state.probes[id] = probe
                return nil
            }
            state.probes[id] = nil
            let first = probe.batch.records.first?.sequence
            if probe.anyAccepted {
                if let first { state.refusedWhole[first] = nil }
                return .recordsRefused(probe.refused)
            }
            guard !probe.anyWithdrawn, let error = probe.refused.last?.error else {
                return .undecided(probe.refused.map(\.part))
            }
            if let first {
                if state.refusedWhole.count >= Self.capacity { state.refusedWhole.removeAll() }
                state.refusedWhole[first, default: 0] += 1
            }
            return .endpointRefuses(probe.refused.map(\.part), error)
        }
    }
}
