#if canImport(Glibc)
import Glibc
#endif

/// Reads newline-separated lines from a file descriptor, cutting lines longer than a limit instead of holding
/// them whole in memory.
public final class LineReader {
    /// One line, without its newline.
    public struct Line: Sendable {
        public var bytes: [UInt8]
        /// Whether bytes beyond the limit were dropped.
        public var truncated: Bool
    }

    private let descriptor: Int32
    private let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    private var isAtEnd = false
    private var skippingRestOfLine = false

    public init(descriptor: Int32, maximumLineBytes: Int) {
        self.descriptor = descriptor
        self.maximumLineBytes = maximumLineBytes
    }

    /// The next line, blocking until one is complete; `nil` at end of input. A last line without a newline counts.
    public func next() throws -> Line? {
        while true {
            if let line = takeLine() { return line }
            if isAtEnd {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return Line(bytes: buffer, truncated: false)
            }
            try fill()
        }
    }

    /// Whether a line could be returned without waiting: buffered or readable now.
    public var hasInputReady: Bool {
        if buffer.contains(UInt8(ascii: "\n")) || isAtEnd { return true }
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        return poll(&descriptors, 1, 0) > 0
    }

    private func takeLine() -> Line? {
        if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = Array(buffer[..<newline])
            buffer.removeSubrange(...newline)
            if skippingRestOfLine {
                skippingRestOfLine = false
                return takeLine()
            }
            return Line(bytes: line, truncated: false)
        }
        if skippingRestOfLine {
            buffer.removeAll(keepingCapacity: true)
            return nil
        }
        if buffer.count > maximumLineBytes {
            let line = Array(buffer[..<maximumLineBytes])
            buffer.removeAll(keepingCapacity: true)
            skippingRestOfLine = true
            return Line(bytes: line, truncated: true)
        }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw LineReaderError(errno: errno) }
            if count == 0 {
                isAtEnd = true
                if skippingRestOfLine {
                    buffer.removeAll()
                    skippingRestOfLine = false
                }
            } else {
                buffer.append(contentsOf: chunk[..<count])
            }
            return
        }
    }
}

/// Reading standard input failed.
public struct LineReaderError: Error, CustomStringConvertible {
    let errno: Int32
    public var description: String { "cannot read input: \(SystemError.describe(errno))" }
}
