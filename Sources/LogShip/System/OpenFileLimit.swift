#if canImport(Glibc)
import Glibc
#endif

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`).
public enum OpenFileLimit {
    /// The soft limit in force.
    static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Int.max }
        return Int(clamping: limit.rlim_cur)
    }

    /// How many descriptors the process has open now (the entries of `/proc/self/fd`, less the one reading it).
    static var openNow: Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != 0x2E { count += 1 }  // not "." or ".."
        }
        return count - 1
    }

    /// Raises the soft limit to the hard limit (the soft default, often 1024, is for programs that use `select`),
    /// and returns the soft limit then in force.
    @discardableResult
    public static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Int.max }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}
