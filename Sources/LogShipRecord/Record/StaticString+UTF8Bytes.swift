extension StaticString {
    /// The string's UTF-8 bytes, in place.
    package var utf8Bytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: utf8Start, count: utf8CodeUnitCount)
    }
}
