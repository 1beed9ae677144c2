#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// An exclusive lock on `<spool>.lock`, so two daemons never share a spool.
///
/// A POSIX record lock (`fcntl(F_SETLK)`), because a child process does not inherit it: a process this one
/// spawns cannot keep the spool locked after it is released (a `flock` lives on in a child between its fork and
/// its exec). Record locks do not exclude the same process, so the paths this process holds are kept too.
final class SpoolLock: Sendable {
    /// Spool lock files this process holds.
    private static let held = Mutex<Set<String>>([])

    private let path: String
    private let descriptor: Int32

    /// Creates the spool's directory if needed and takes the lock.
    ///
    /// - Throws: ``SpoolError/inUse(_:)`` when this or another process holds it.
    init(databasePath: String) throws {
        if let failure = FileSystem.createParentDirectories(of: databasePath, mode: 0o750) {
            throw SpoolError.storage(failure)
        }
        let path = databasePath + ".lock"
        guard Self.held.withLock({ $0.insert(path).inserted }) else { throw SpoolError.inUse(databasePath) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else {
            let code = errno
            Self.held.withLock { _ = $0.remove(path) }
            throw SpoolError.storage("cannot open \(path): \(SystemError.describe(code))")
        }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        guard fcntl(descriptor, F_SETLK, &lock) == 0 else {
            let code = errno
            close(descriptor)
            Self.held.withLock { _ = $0.remove(path) }
            if code == EACCES || code == EAGAIN { throw SpoolError.inUse(databasePath) }
            throw SpoolError.storage("cannot lock \(path): \(SystemError.describe(code))")
        }
        self.path = path
        self.descriptor = descriptor
    }

    /// Gives the lock up; also happens when the process exits.
    func unlock() {
        close(descriptor)
        Self.held.withLock { _ = $0.remove(path) }
    }
}
