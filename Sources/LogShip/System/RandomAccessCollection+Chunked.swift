extension RandomAccessCollection {
    /// The collection in consecutive slices of `size` elements, the last one shorter if need be.
    func chunked(_ size: Int) -> [SubSequence] {
        stride(from: 0, to: count, by: size).map { offset in
            self[index(startIndex, offsetBy: offset)..<index(startIndex, offsetBy: Swift.min(offset + size, count))]
        }
    }
}
