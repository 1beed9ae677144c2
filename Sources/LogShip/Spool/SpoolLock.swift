#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `<spool>.lock`, so two daemons never share a spool.
final class SpoolLock: Sendable {
    private let descriptor: Int32

    /// Creates the spool's directory if needed and takes the lock.
    ///
    /// - Throws: ``SpoolError/inUse(_:)`` when another process holds it.
    init(databasePath: String) throws {
        if let failure = FileSystem.createParentDirectories(of: databasePath, mode: 0o750) {
            throw SpoolError.storage(failure)
        }
        let path = databasePath + ".lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw SpoolError.storage("cannot open \(path): \(SystemError.describe(errno))") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK { throw SpoolError.inUse(databasePath) }
            throw SpoolError.storage("cannot lock \(path): \(SystemError.describe(code))")
        }
    }

    /// Gives the lock up; also happens when the process exits.
    func release() {
        close(descriptor)
    }
}
