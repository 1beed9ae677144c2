import CMalloc
#if canImport(Glibc)
import Glibc
#endif

/// How the daemon asks glibc's allocator to hold memory: a long-running process with a few busy threads, whose
/// records pass through large short-lived buffers (a read, a chunk of lines, a request body).
public enum MallocTuning {
    /// At most ``arenas`` arenas, and blocks of 256 KiB and more mapped apart (returned to the system when freed)
    /// instead of a threshold that glibc raises as it goes.
    ///
    /// The arena count trades memory for contention: each thread that allocates gets an arena of its own up to the
    /// limit, and each arena keeps its own high-water mark of what passed through its thread. Records pass through
    /// about six threads; with one arena they take turns at its lock, and the daemon holds one high-water mark.
    /// BENCHMARKS.md's "Allocator arenas" (`logshipd-bench arenas`) and Measured choices have both sides.
    ///
    /// A lower threshold saves a little more memory but maps and unmaps the buffers of every request (BENCHMARKS.md,
    /// Measured choices).
    ///
    /// Settings an operator gives in the environment (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`, or the same in
    /// `GLIBC_TUNABLES`) are kept.
    public static func applyForDaemon() {
        let environment = ProcessEnvironment()
        if !environment.setsMallocTunable("arena_max", variable: "MALLOC_ARENA_MAX") {
            _ = mallopt(M_ARENA_MAX, Int32(arenas))
        }
        if !environment.setsMallocTunable("mmap_threshold", variable: "MALLOC_MMAP_THRESHOLD_") {
            _ = mallopt(M_MMAP_THRESHOLD, Int32(mapThreshold))
        }
    }

    /// The most arenas glibc keeps, unless the environment says otherwise.
    public static let arenas = 1

    /// The size from which glibc maps a block apart instead of taking it from an arena: buffers made often (a
    /// spool chunk's lines) are kept below it.
    static let mapThreshold = 256 << 10

    /// Trims at most once per 10 s: a spool that empties after every request (records arriving one at a time)
    /// must not trim after every request. An emptying within those 10 s gets its trim at their end, so the memory a
    /// drained backlog went through is given back even when an earlier, small emptying trimmed just before.
    private static let freeMemoryRelease = ThrottledRelease(interval: .seconds(10)) { _ = malloc_trim(0) }

    /// Gives the pages glibc holds free back to the system (`malloc_trim`), now or at the end of the throttle's
    /// interval; called when the spool has emptied.
    ///
    /// glibc returns only the top of each arena by itself, so the memory a drained backlog went through stays
    /// resident (BENCHMARKS.md, Measured choices). Runs in a background task: trimming walks every arena under its
    /// lock.
    static func releaseFreeMemory() {
        freeMemoryRelease.request()
    }
}

/// The process environment, read without Foundation.
private struct ProcessEnvironment {
    subscript(name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Whether glibc's malloc tunable `name` is set: by its own `variable`, or in `GLIBC_TUNABLES`
    /// (`glibc.malloc.arena_max=4:glibc.malloc.…`).
    func setsMallocTunable(_ name: String, variable: String) -> Bool {
        guard self[variable] == nil else { return true }
        let tunables = self["GLIBC_TUNABLES"]?.split(separator: ":") ?? []
        return tunables.contains { $0.hasPrefix("glibc.malloc.\(name)=") }
    }
}
