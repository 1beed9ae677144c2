/// A cursor over bytes for the hand-written parsers: small, allocation-free, never traps on bad input.
///
/// It reads a slice in place; its indices are the slice's own. Its small steps are always inlined: the optimizer
/// left them calls, on the path of every socket line (BENCHMARKS.md's Measured choices has what they cost).
struct ByteScanner {
    let bytes: ArraySlice<UInt8>
    private(set) var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    init(_ bytes: [UInt8]) {
        self.init(bytes[...])
    }

    var isAtEnd: Bool { index >= bytes.endIndex }

    var remaining: ArraySlice<UInt8> { bytes[min(index, bytes.endIndex)...] }

    /// Bytes left from the cursor on.
    var remainingCount: Int { max(bytes.endIndex - index, 0) }

    @inline(__always)
    func peek() -> UInt8? { index < bytes.endIndex ? bytes[index] : nil }

    /// The byte `offset` places after the cursor, if there is one.
    @inline(__always)
    func peek(at offset: Int) -> UInt8? { index + offset < bytes.endIndex ? bytes[index + offset] : nil }

    @inline(__always)
    mutating func next() -> UInt8? {
        guard index < bytes.endIndex else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    /// Consumes `byte` if it is next.
    @inline(__always)
    mutating func skip(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    mutating func skip(anyOf choices: [UInt8]) -> Bool {
        guard let byte = peek(), choices.contains(byte) else { return false }
        index += 1
        return true
    }

    /// Consumes one ASCII digit.
    @inline(__always)
    mutating func digit() -> Int? {
        guard let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
        index += 1
        return Int(byte - UInt8(ascii: "0"))
    }

    /// Consumes exactly `count` ASCII digits, or nothing.
    @inline(__always)
    mutating func digits(_ count: Int) -> Int? {
        let start = index
        var value = 0
        for _ in 0..<count {
            guard let digit = digit() else {
                index = start
                return nil
            }
            value = value * 10 + digit
        }
        return value
    }

    /// Consumes bytes up to (not including) the next space or the end; `nil` when that token is empty.
    mutating func token() -> ArraySlice<UInt8>? {
        tokenRange().map { bytes[$0] }
    }

    /// ``token()``'s indices in ``bytes``, for a caller that keeps where the token is rather than a slice of it.
    @inline(__always)
    mutating func tokenRange() -> Range<Int>? {
        let start = index
        while let byte = peek(), byte != UInt8(ascii: " ") { index += 1 }
        return index > start ? start..<index : nil
    }

    mutating func seek(to newIndex: Int) {
        index = newIndex
    }
}
