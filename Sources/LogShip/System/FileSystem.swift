#if canImport(Glibc)
import Glibc
#endif

enum FileSystem {
    /// Creates the directories leading to `path` (`mkdir -p` of its parent) with `mode`.
    ///
    /// - Returns: A description of the failure, or `nil` on success.
    static func createParentDirectories(of path: String, mode: mode_t) -> String? {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return nil }
        let directory = path[..<slash]
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                return "directory \(prefix) cannot be created: \(SystemError.describe(errno))"
            }
        }
        return nil
    }
}

extension FileSystem {
    /// The directory holding `path`: `/` for a file in the root, `.` for a path without a slash.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Flushes the directory holding `path` to the disk, so that a rename or a new file in it outlives a power
    /// loss; a failure is ignored (the rename itself stands either way).
    static func syncDirectory(of path: String) {
        let descriptor = open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}
