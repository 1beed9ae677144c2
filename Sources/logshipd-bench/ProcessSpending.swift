import Foundation
import LogShipTestKit

/// What a process has spent so far: CPU time, and how often its threads gave up the CPU to wait (voluntary context
/// switches: for the network, for another thread, for a lock).
///
/// Switches are the sum over the threads alive when it is read (`/proc/PID/task/*/status`): a thread that ends
/// between two readings takes its count with it, so a difference undercounts by what such threads did. The
/// shippers compared keep their threads for the whole run.
struct ProcessSpending {
    var cpuSeconds: Double
    var voluntarySwitches: Int

    /// Reads `pid`'s figures from /proc.
    ///
    /// - Throws: When the process is gone.
    init(pid: pid_t) throws {
        cpuSeconds = try ProcessStat(path: "/proc/\(pid)/stat").cpuTicks / Double(sysconf(Int32(_SC_CLK_TCK)))
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        let name = "voluntary_ctxt_switches:"
        voluntarySwitches = tasks.reduce(0) { sum, task in
            // A thread that ended since the listing counts nothing.
            let values = try? ProcFields.values(path: "/proc/\(pid)/task/\(task)/status", named: [name])
            return sum + Int(values?[name] ?? 0)
        }
    }

    private init(cpuSeconds: Double, voluntarySwitches: Int) {
        self.cpuSeconds = cpuSeconds
        self.voluntarySwitches = voluntarySwitches
    }

    /// What was spent between `earlier` and `later`.
    static func - (later: Self, earlier: Self) -> Self {
        Self(
            cpuSeconds: later.cpuSeconds - earlier.cpuSeconds,
            voluntarySwitches: later.voluntarySwitches - earlier.voluntarySwitches)
    }
}
