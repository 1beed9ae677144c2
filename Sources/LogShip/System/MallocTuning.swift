import CMalloc
#if canImport(Glibc)
import Glibc
#endif

/// How the daemon asks glibc's allocator to hold memory: a long-running process with a few busy threads, whose
/// records pass through large short-lived buffers (a read, a chunk of lines, a request body).
public enum MallocTuning {
    /// At most eight arenas (glibc allows eight per core), and blocks of 256 KiB and more mapped apart (returned to
    /// the system when freed) instead of a threshold that glibc raises as it goes.
    ///
    /// The arena count trades memory for contention. Records pass through about six threads (event loops, the
    /// cooperative pool, the spool's writer, the datagram reader), and with fewer arenas than that they queue on
    /// arena locks: with two, `perf` showed 4% of the daemon's CPU waking lock waiters. The intake scenario
    /// (`logshipd-bench target 4` run alone on a 2-core VM, interleaved) took a median of 245 000 lines/s with
    /// eight (204 000–286 000 over 8 runs) against 208 000 with two (180 000–238 000 over 6); four gave 235 000,
    /// sixteen (glibc's default there) 260 000. The batched delivery scenario (`peer logshipd 1`) took 5.4–5.7 µs
    /// CPU per line against 6.1–6.5. The price is memory held in more arenas: 48.9–53.1 MiB peak with 1 000 000
    /// records pending (`target 6`, 10 runs, `make bench`'s included) against 46.0–47.8 with two, which put the
    /// peak above issue 11's 48 MiB target; it was chosen for the cost per record. Those runs loaded the Swift
    /// runtime as shared libraries; the release builds of `make` link it in, and measured 43.9–48.0 MiB.
    ///
    /// A threshold of 64 or 128 KiB saves a little more memory but maps and unmaps the buffers of every request:
    /// 20% more CPU per line in the batched comparison; at 256 KiB it costs nothing measurable.
    ///
    /// Settings an operator gives in the environment (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`) are kept.
    public static func applyForDaemon() {
        let environment = ProcessEnvironment()
        if environment["MALLOC_ARENA_MAX"] == nil { _ = mallopt(M_ARENA_MAX, 8) }
        if environment["MALLOC_MMAP_THRESHOLD_"] == nil { _ = mallopt(M_MMAP_THRESHOLD, Int32(mapThreshold)) }
    }

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
    /// resident: measured after 1 000 000 records were delivered (`logshipd-bench target 6`), 69 MiB resident, of
    /// which 34 MiB anonymous; after `malloc_trim(0)`, 43 MiB and 8.6 MiB. Runs in a background task: trimming
    /// walks every arena under its lock.
    static func releaseFreeMemory() {
        freeMemoryRelease.request()
    }
}

/// The process environment, read without Foundation.
private struct ProcessEnvironment {
    subscript(name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
