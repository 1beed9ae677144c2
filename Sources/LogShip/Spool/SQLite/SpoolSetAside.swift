#if canImport(Glibc)
import Glibc
#endif

/// A spool file that could not be opened as a database, renamed aside at start so that a fresh spool could take
/// its place: its bytes are kept for whoever wants to look, and the daemon runs instead of failing at every start.
public struct SpoolSetAside: Hashable, Sendable, Codable {
    /// Where the damaged file is now: `<spool>.corrupt-<UTC time>`, its `-wal` and `-shm` files beside it.
    public var path: String
    /// Why it could not be opened.
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// Renames the spool file at `databasePath`, with its `-wal` and `-shm` files if present, to
    /// `<databasePath>.corrupt-<now>` (a number added should that name be taken).
    ///
    /// - Important: The caller holds the spool's lock and has closed every connection to the file.
    /// - Throws: ``SpoolError/storage(_:)`` when the file cannot be renamed; then nothing was.
    static func moveAside(_ databasePath: String, reason: String, now: Timestamp = .now()) throws -> SpoolSetAside {
        // 2026-11-25T14:30:00.123456Z → 20261125T143000Z
        let time = now.rfc3339.prefix(19).filter { $0 != "-" && $0 != ":" } + "Z"
        var target = "\(databasePath).corrupt-\(time)"
        var attempt = 1
        while access(target, F_OK) == 0 {
            attempt += 1
            target = "\(databasePath).corrupt-\(time)-\(attempt)"
        }
        guard rename(databasePath, target) == 0 else {
            throw SpoolError.storage("cannot set \(databasePath) aside: \(SystemError.describe(errno))")
        }
        // SQLite finds a database's journal by its name: renamed alike, the set-aside file opens as it was.
        for suffix in ["-wal", "-shm"] where access(databasePath + suffix, F_OK) == 0 {
            if rename(databasePath + suffix, target + suffix) != 0 {
                // The fresh spool must not start with the old one's journal.
                unlink(databasePath + suffix)
            }
        }
        FileSystem.syncDirectory(of: databasePath)
        return SpoolSetAside(path: target, reason: reason)
    }
}
