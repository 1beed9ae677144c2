#if canImport(Glibc)
import Glibc
#endif

/// Text written straight to a file descriptor, as `FileHandle.write` wrote it (FoundationEssentials has no
/// `FileHandle`): a line of `logctl receive` reaches a pipe at once, not when a buffer fills.
package enum UnbufferedOutput {
    /// Writes `text` to `descriptor` (`STDOUT_FILENO`, `STDERR_FILENO`); stops at an error, such as a closed pipe.
    package static func write(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
