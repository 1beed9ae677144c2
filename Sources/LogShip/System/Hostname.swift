#if canImport(Glibc)
import Glibc
#endif

enum Hostname {
    /// The system's host name, as `gethostname(2)` reports it.
    static var current: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    }
}
