import Foundation
import Synchronization

/// Samples a process's memory every 20 ms, on a thread of its own, for the peak of what the process owns: the
/// highest `RssAnon` seen, and PSS read at that moment.
///
/// The kernel keeps a peak of the whole resident size (`VmHWM`) but none of its anonymous part, so that one is
/// sampled: a spike shorter than the interval may go unseen.
final class MemorySampler: Sendable {
    /// What a process held at most while it was sampled, in MiB.
    struct Peak: Sendable {
        /// The highest `RssAnon` sampled.
        var anonymous = 0.0
        /// PSS when that `RssAnon` was sampled.
        var proportional = 0.0
        /// `VmHWM` at the last sample: the kernel's peak of everything resident, file pages included.
        var resident = 0.0
    }

    static let interval = 0.020

    private struct State {
        var stopped = false
        var peak = Peak()
    }

    private let pid: pid_t
    private let state = Mutex(State())

    /// Starts sampling `pid` at once.
    init(pid: pid_t) {
        self.pid = pid
        Thread.detachNewThread { [self] in
            while !state.withLock(\.stopped), sample() {
                Thread.sleep(forTimeInterval: Self.interval)
            }
        }
    }

    /// Takes a last sample, stops, and returns the peak.
    ///
    /// - Important: Call it while the process still runs; once it has exited only the samples before count.
    func stop() -> Peak {
        _ = sample()
        return state.withLock { state in
            state.stopped = true
            return state.peak
        }
    }

    /// One sample; false once the process is gone. PSS is read only at a new peak: smaps_rollup walks every
    /// mapping of the process, under the lock its page faults take too.
    private func sample() -> Bool {
        guard let memory = try? ProcessMemory(pid: pid) else { return false }
        let isPeak = state.withLock { state in
            state.peak.resident = max(state.peak.resident, memory.residentPeak)
            return memory.anonymous > state.peak.anonymous
        }
        guard isPeak, let proportional = try? ProcessMemory.proportional(pid: pid) else { return true }
        state.withLock { state in
            guard memory.anonymous > state.peak.anonymous else { return }
            state.peak.anonymous = memory.anonymous
            state.peak.proportional = proportional
        }
        return true
    }
}
