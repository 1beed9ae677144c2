import LogShipRecord

/// A handful of names, each shorter than 64 bytes, looked up by their bytes, as a format looks up every field of
/// every record: by length first, then byte for byte; no hashing, no string made.
package struct ByteNames: Sendable {
    private let names: [[UInt8]]
    /// Bit `n` is set when a name is `n` bytes long.
    private let lengths: UInt64

    package init(_ names: some Sequence<String>) {
        self.names = names.map { Array($0.utf8) }
        precondition(self.names.allSatisfy { $0.count < 64 }, "a name of 64 bytes or more")
        lengths = self.names.reduce(0) { $0 | 1 << UInt64($1.count) }
    }

    package func contains(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count < 64, lengths & 1 << UInt64(bytes.count) != 0 else { return false }
        return names.contains { $0.elementsEqual(bytes) }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether the bytes start with `prefix`.
    package func starts(with prefix: StaticString) -> Bool {
        count >= prefix.utf8CodeUnitCount
            && UnsafeBufferPointer(rebasing: self[..<prefix.utf8CodeUnitCount]).elementsEqual(prefix.utf8Bytes)
    }
}
