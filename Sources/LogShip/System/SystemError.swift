#if canImport(Glibc)
import Glibc
#endif

/// Text for `errno` values.
enum SystemError {
    static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
