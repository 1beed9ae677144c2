import Foundation
import Synchronization

/// A secret kept in a file (a bearer token, as systemd's `LoadCredential=` provides it), read again whenever the
/// file changes, so that a new token takes effect without a restart. The secret is never logged.
final class SecretFile: Sendable {
    let path: String
    private let cached = Mutex<(stamp: FileStamp, secret: String)?>(nil)

    /// What tells a changed file apart: its inode, size and modification time.
    private struct FileStamp: Equatable {
        var inode: UInt64
        var size: Int64
        var modified: timespec

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.inode == rhs.inode && lhs.size == rhs.size && lhs.modified.tv_sec == rhs.modified.tv_sec
                && lhs.modified.tv_nsec == rhs.modified.tv_nsec
        }
    }

    init(path: String) {
        self.path = path
    }

    /// The file's content without surrounding white space; empty when the file is.
    ///
    /// - Throws: ``UploadError`` (a refused credential) when the file cannot be read.
    func read() throws -> String {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw UploadError.credentials("cannot read \(path): \(SystemError.describe(errno))")
        }
        let stamp = FileStamp(inode: UInt64(status.st_ino), size: Int64(status.st_size), modified: status.st_mtim)
        if let cached = cached.withLock({ $0 }), cached.stamp == stamp { return cached.secret }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UploadError.credentials("cannot read \(path): \(SystemError.describe(EACCES))")
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        cached.withLock { $0 = (stamp, secret) }
        return secret
    }
}
