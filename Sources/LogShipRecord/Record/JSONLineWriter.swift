/// Writes one JSON object into memory the caller sized for it, escaping strings as RFC 8259 requires.
///
/// The NDJSON line of every record is written here, so it works on raw memory: a byte is a store, a string that
/// needs no escape (nearly all) is one copy.
///
/// - Important: The buffer must hold what is written: the fixed parts plus six bytes per byte of every string
///   (`\u001f`).
struct JSONLineWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    /// Bytes written so far.
    private(set) var count = 0
    private var isFirst = true

    /// Whether a byte of `utf8` needs escaping: a control character, a quote or a backslash. Eight bytes at a
    /// time, since nearly every string is checked to the end and found clean.
    static func needsEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = utf8.baseAddress else { return false }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        while offset + 8 <= utf8.count {
            let word = UnsafeRawPointer(start + offset).loadUnaligned(as: UInt64.self)
            // A byte below 0x20, or equal to one of the two (a zero byte of the XOR): its high bit is set in the
            // borrow of the subtraction while clear in the byte itself.
            let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
            let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            let found = ((word &- ones &* 0x20) & ~word) | ((quote &- ones) & ~quote)
                | ((backslash &- ones) & ~backslash)
            if found & highs != 0 { return true }
            offset += 8
        }
        while offset < utf8.count {
            let code = start[offset]
            if code < 0x20 || code == UInt8(ascii: "\"") || code == UInt8(ascii: "\\") { return true }
            offset += 1
        }
        return false
    }

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
        byte(UInt8(ascii: "{"))
    }

    /// Closes the object; returns the bytes written.
    mutating func finish() -> Int {
        byte(UInt8(ascii: "}"))
        return count
    }

    mutating func field(_ key: StaticString, string value: some JSONText) {
        self.key(key)
        string(value)
    }

    mutating func field(_ key: StaticString, rawString value: StaticString) {
        self.key(key)
        byte(UInt8(ascii: "\""))
        copy(UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
        byte(UInt8(ascii: "\""))
    }

    mutating func field(_ key: StaticString, integer value: Int) {
        self.key(key)
        integer(value)
    }

    mutating func field(_ key: StaticString, timestamp: Timestamp) {
        self.key(key)
        byte(UInt8(ascii: "\""))
        count += timestamp.writeRFC3339(into: UnsafeMutableBufferPointer(rebasing: buffer[count...]))
        byte(UInt8(ascii: "\""))
    }

    mutating func field(_ key: StaticString, bool value: Bool) {
        self.key(key)
        copy(value ? "true" : "false")
    }

    mutating func field<Pairs: Sequence, Key: JSONText, Value: JSONText>(_ key: StaticString, object pairs: Pairs)
    where Pairs.Element == (key: Key, value: Value) {
        self.key(key)
        byte(UInt8(ascii: "{"))
        var isFirstPair = true
        for pair in pairs {
            if !isFirstPair { byte(UInt8(ascii: ",")) }
            isFirstPair = false
            string(pair.key)
            byte(UInt8(ascii: ":"))
            string(pair.value)
        }
        byte(UInt8(ascii: "}"))
    }

    // MARK: Parts

    private mutating func key(_ key: StaticString) {
        if !isFirst { byte(UInt8(ascii: ",")) }
        isFirst = false
        byte(UInt8(ascii: "\""))
        copy(key)
        byte(UInt8(ascii: "\""))
        byte(UInt8(ascii: ":"))
    }

    private mutating func byte(_ value: UInt8) {
        buffer[count] = value
        count += 1
    }

    private mutating func copy(_ text: StaticString) {
        copy(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        assert(count + bytes.count <= buffer.count, "the line outgrew the room sized for it")
        (buffer.baseAddress! + count).update(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        count += bytes.count
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// A JSON string: copied whole unless a byte needs escaping.
    private mutating func string(_ value: some JSONText) {
        byte(UInt8(ascii: "\""))
        value.withUTF8Bytes { write(utf8: $0) }
        byte(UInt8(ascii: "\""))
    }

    /// String contents, escaped where needed.
    private mutating func write(utf8: UnsafeBufferPointer<UInt8>) {
        guard Self.needsEscape(utf8) else {
            copy(UnsafeRawBufferPointer(utf8))
            return
        }
        for code in utf8 { escaped(code) }
    }

    private mutating func escaped(_ code: UInt8) {
        switch code {
        case UInt8(ascii: "\""): copy("\\\"")
        case UInt8(ascii: "\\"): copy("\\\\")
        case UInt8(ascii: "\n"): copy("\\n")
        case UInt8(ascii: "\r"): copy("\\r")
        case UInt8(ascii: "\t"): copy("\\t")
        case 0..<0x20:
            copy("\\u00")
            byte(Self.hexDigits.utf8Start[Int(code >> 4)])
            byte(Self.hexDigits.utf8Start[Int(code & 0xF)])
        default: byte(code)
        }
    }

    /// `value` in decimal.
    private mutating func integer(_ value: Int) {
        if value < 0 { byte(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var width = 1
        var scale: UInt = 10
        while width < 20, magnitude >= scale {
            width += 1
            guard scale <= UInt.max / 10 else { break }
            scale *= 10
        }
        for position in stride(from: width - 1, through: 0, by: -1) {
            buffer[count + position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        }
        count += width
    }
}

/// Text the writer copies into a line: valid UTF-8, read in place.
protocol JSONText {
    /// Its length in UTF-8 bytes.
    var utf8Count: Int { get }
    /// Calls `body` with its UTF-8 bytes.
    func withUTF8Bytes(_ body: (UnsafeBufferPointer<UInt8>) -> Void)
}

extension String: JSONText {
    var utf8Count: Int { utf8.count }

    func withUTF8Bytes(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        // A native string lends its bytes without the retain and release of the `var` that `withUTF8` needs;
        // a foreign one (none on Linux) is made contiguous first.
        if utf8.withContiguousStorageIfAvailable(body) == nil {
            var contiguous = self
            contiguous.withUTF8(body)
        }
    }
}

/// Bytes of a frame, for lines written straight from it: the caller has checked that they are UTF-8.
extension UnsafeBufferPointer<UInt8>: JSONText {
    var utf8Count: Int { count }

    func withUTF8Bytes(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        body(self)
    }
}
