#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// The filesystem the spool file is on: how much of it the spool may fill, and a reserve for the spool's own
/// writes once it is full.
///
/// - The spool leaves `spool.min_free_disk` free, or a quarter of the filesystem when that is all it could ever
///   leave (a filesystem smaller than twice the margin): records are evicted, lowest class first, to stay within
///   it, and refused when nothing may be evicted.
/// - A file of ``reserveBytes`` beside the spool (`<spool>.reserve`) holds space for the spool's own writes:
///   when a write finds the disk full, the reserve is released and the write tried again (``SQLiteSpool``
///   also checkpoints then, so that the WAL starts again in the space its file holds). The reserve is made again
///   once the disk has room for it twice over.
final class SpoolDisk: Sendable {
    /// What the spool's filesystem looks like now.
    struct Sample: Hashable, Sendable {
        /// Bytes an unprivileged process may still write.
        var free: Int
        var size: Int
    }

    let directory: String
    let reservePath: String
    /// `spool.min_free_disk`.
    let configuredMinimumFree: Int
    /// What the spool leaves free: ``configuredMinimumFree``, or less on a small filesystem.
    let minimumFree: Int
    let reserveBytes: Int
    private let reserveHeld: Mutex<Bool>
    private let logger: Logger

    /// Measures the filesystem of `spoolPath`, warns when it cannot leave `spool.min_free_disk` free, and makes
    /// the reserve if there is room for it.
    init(spoolPath: String, configuredMinimumFree: Int, logger: Logger) {
        directory = FileSystem.directory(of: spoolPath)
        reservePath = spoolPath + ".reserve"
        self.configuredMinimumFree = configuredMinimumFree
        self.logger = logger
        let sample = Self.sample(directory)
        let size = sample?.size ?? .max
        minimumFree = size / 2 < configuredMinimumFree ? size / 4 : configuredMinimumFree
        // A few transactions' worth of WAL at the page sizes the spool uses: 1 MiB on the smallest filesystems,
        // at most 16 MiB.
        reserveBytes = min(max(size / 16, 1 << 20), 16 << 20)
        reserveHeld = Mutex(false)
        warnAtStart(sample)
        // A reserve an earlier run left is this run's: its space is taken already.
        if access(reservePath, F_OK) == 0 { makeReserve() } else { reserveIfRoom() }
    }

    /// The filesystem now, or `nil` when it cannot be measured.
    func sample() -> Sample? { Self.sample(directory) }

    private static func sample(_ directory: String) -> Sample? {
        var status = statvfs()
        guard statvfs(directory, &status) == 0 else { return nil }
        return Sample(
            free: Int(status.f_bavail) * Int(status.f_frsize), size: Int(status.f_blocks) * Int(status.f_frsize))
    }

    /// Bytes the spool may still add: free space beyond what it leaves free, plus `freePageBytes` inside the
    /// database file, which SQLite reuses before it grows the file. `nil` when the filesystem cannot be measured.
    func room(freePageBytes: Int) -> (room: Int, sample: Sample)? {
        sample().map { ($0.free - minimumFree + freePageBytes, $0) }
    }

    /// Whether the reserve is held now.
    var holdsReserve: Bool { reserveHeld.withLock { $0 } }

    /// Gives the reserve's space back to the filesystem, for a write that found the disk full; does nothing when
    /// it is given already.
    func releaseReserve() {
        guard reserveHeld.withLock({ held in
            defer { held = false }
            return held
        }) else { return }
        unlink(reservePath)
        logger.warning(
            "the disk holding the spool is full: its reserve is released, for records to be evicted for new ones",
            metadata: ["logship.spool.directory": "\(directory)", "logship.spool.reserve": "\(reserveBytes)"])
    }

    /// Makes the reserve again once the filesystem has room for it twice over what the spool leaves free.
    func reserveIfRoom() {
        guard !holdsReserve, let sample = sample(), sample.free >= minimumFree + 2 * reserveBytes else { return }
        makeReserve()
    }

    /// Allocates the reserve file's blocks; a file that cannot have them all is removed.
    private func makeReserve() {
        let descriptor = open(reservePath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        guard posix_fallocate(descriptor, 0, off_t(reserveBytes)) == 0 else {
            unlink(reservePath)
            return
        }
        reserveHeld.withLock { $0 = true }
    }

    /// Says at start when the filesystem cannot leave `spool.min_free_disk` free, with the numbers.
    private func warnAtStart(_ sample: Sample?) {
        guard let sample else { return }
        let (size, free) = (ByteCountText.approximate(sample.size), ByteCountText.approximate(sample.free))
        let (configured, leaves) = (
            ByteCountText.approximate(configuredMinimumFree), ByteCountText.approximate(minimumFree)
        )
        let warning: String
        if minimumFree < configuredMinimumFree {
            warning = "the spool's filesystem is \(size) (\(free) free), too small to leave spool.min_free_disk "
                + "(\(configured)) free; logshipd leaves \(leaves) free instead, a quarter of it"
        } else if sample.free < minimumFree + reserveBytes {
            warning = "the spool's filesystem has \(free) free of \(size), less than spool.min_free_disk (\(leaves)): "
                + "records are stored only as older ones of lower classes are evicted, refused when none may be"
        } else {
            return
        }
        logger.warning("\(warning)", metadata: ["logship.spool.directory": "\(directory)"])
    }
}
