import Foundation
import LogShipTestKit

/// One look at a process's memory in `/proc`, in MiB.
///
/// `RssAnon` is the memory the process owns (heap, stacks, its own copies of relocated pages); `RssFile` is
/// program and library pages, which belong to the page cache: shared, and dropped by the kernel under pressure.
/// PSS charges every shared page to the processes mapping it in equal parts.
struct ProcessMemory {
    /// `VmRSS`: everything resident, file pages included.
    var resident: Double
    /// `RssAnon`.
    var anonymous: Double
    /// `VmHWM`: the kernel's peak of `VmRSS` since the process started.
    var residentPeak: Double

    /// Reads `/proc/PID/status`.
    ///
    /// - Throws: When the process is gone or a field is missing.
    init(pid: pid_t) throws {
        let fields = try Self.fields(path: "/proc/\(pid)/status", named: ["VmRSS:", "RssAnon:", "VmHWM:"])
        resident = fields["VmRSS:"]!
        anonymous = fields["RssAnon:"]!
        residentPeak = fields["VmHWM:"]!
    }

    /// `Pss` from `/proc/PID/smaps_rollup`, which walks every mapping: dearer than the status file.
    ///
    /// - Throws: When the process is gone.
    static func proportional(pid: pid_t) throws -> Double {
        try fields(path: "/proc/\(pid)/smaps_rollup", named: ["Pss:"])["Pss:"]!
    }

    /// The figures of the lines named `names` (`Name:   1234 kB`) in MiB, every one of them.
    private static func fields(path: String, named names: Set<String>) throws -> [String: Double] {
        try ProcFields.values(path: path, named: names).mapValues { kilobytes in kilobytes / 1024 }
    }
}

/// RSS, RssAnon and PSS of a process at one moment, in MiB: `9.9 / 3.8 / 8.7`.
struct MemoryReading: CustomStringConvertible {
    var resident: Double
    var anonymous: Double
    var proportional: Double

    /// Reads them from `/proc`.
    ///
    /// - Throws: When the process is gone.
    init(pid: pid_t) throws {
        let memory = try ProcessMemory(pid: pid)
        (resident, anonymous) = (memory.resident, memory.anonymous)
        proportional = try ProcessMemory.proportional(pid: pid)
    }

    var description: String { String(format: "%.1f / %.1f / %.1f", resident, anonymous, proportional) }
}
