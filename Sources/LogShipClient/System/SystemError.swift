#if canImport(Glibc)
import Glibc
#endif

/// Text for `errno` values.
package enum SystemError {
    package static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
