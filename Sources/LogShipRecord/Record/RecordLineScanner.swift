/// Reads the one shape ``LogRecord/ndjsonLine`` writes, byte by byte, in place, never trapping on a damaged line.
struct RecordLineScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The whole line: `{"timestamp":…,"priority":…,"severity":…,"host":…,"source":…,"message":…`, then
    /// `"pid"`, `"uid"`, `"gid"` (and `"comm"`) together or not at all, `"fields"` and `"truncated"` when present.
    mutating func record() throws(RecordLineError) -> RecordLine {
        try expect("{\"timestamp\":")
        let timestampText = try string()
        guard !timestampText.hasEscapes, let timestamp = Self.timestamp(bytes[timestampText.range]) else {
            throw failure("an RFC 3339 timestamp", at: timestampText.range.lowerBound)
        }
        try expect(",\"priority\":")
        let priorityName = try string()
        guard !priorityName.hasEscapes, let priority = Self.priority(named: bytes[priorityName.range]) else {
            throw failure("a priority class", at: priorityName.range.lowerBound)
        }
        try expect(",\"severity\":")
        let severityStart = index
        guard let severity = Severity(rawValue: Int(try integer(in: 0...7).value)) else {
            throw failure("a severity", at: severityStart)
        }
        try expect(",\"host\":")
        let host = try string()
        try expect(",\"source\":")
        let sourceName = try string()
        guard !sourceName.hasEscapes, let source = Self.source(named: bytes[sourceName.range]) else {
            throw failure("a source", at: sourceName.range.lowerBound)
        }
        try expect(",\"message\":")
        let message = try string()

        var peer: RecordLine.Peer?
        if skip(",\"pid\":") {
            let pid = try integer(in: Int64(Int32.min)...Int64(Int32.max)).digits
            try expect(",\"uid\":")
            let uid = try integer(in: 0...Int64(UInt32.max)).digits
            try expect(",\"gid\":")
            let gid = try integer(in: 0...Int64(UInt32.max)).digits
            peer = RecordLine.Peer(pid: pid, uid: uid, gid: gid, comm: skip(",\"comm\":") ? try string() : nil)
        }
        var fields = index..<index
        var fieldCount = 0
        var systemdUnit: RecordLine.Field?
        if skip(",\"fields\":{") {
            let start = index
            if peek() != UInt8(ascii: "}") {
                var previous: RecordLine.Text?
                repeat {
                    let key = try string()
                    // The writer sorts the keys; a format writes them in the line's order, so it must be that.
                    if let previous, !isOrdered(previous, key) {
                        throw failure("a key after \"\(text(previous))\"", at: key.range.lowerBound - 1)
                    }
                    previous = key
                    try expect(":")
                    let value = try string()
                    fieldCount += 1
                    if systemdUnit == nil, isSystemdUnit(key) { systemdUnit = RecordLine.Field(key: key, value: value) }
                } while skip(",")
            }
            fields = start..<index
            try expect("}")
        }
        var truncated = false
        if skip(",\"truncated\":") {
            if skip("true") {
                truncated = true
            } else {
                try expect("false")
            }
        }
        try expect("}")
        guard index == bytes.endIndex else { throw failure("the end of the line", at: index) }
        return RecordLine(
            timestamp: timestamp, priority: priority, severity: severity, host: host, source: source,
            message: message, peer: peer, fields: fields, fieldCount: fieldCount, systemdUnitField: systemdUnit,
            truncated: truncated)
    }

    // MARK: Parts

    /// A string's text, escapes undone.
    private func text(_ text: RecordLine.Text) -> String {
        text.hasEscapes
            ? EscapedString(escaped: ArraySlice(bytes[text.range]), hasEscapes: true).string
            : String(decoding: bytes[text.range], as: UTF8.self)
    }

    /// Whether `key` comes after `previous` as ``RecordFields`` sorts them: by their bytes when both are plain
    /// ASCII, where that is the order of `String`, else as strings.
    private func isOrdered(_ previous: RecordLine.Text, _ key: RecordLine.Text) -> Bool {
        let previousBytes = bytes[previous.range], keyBytes = bytes[key.range]
        if !previous.hasEscapes, !key.hasEscapes,
            previousBytes.allSatisfy({ $0 < 0x80 }), keyBytes.allSatisfy({ $0 < 0x80 }) {
            return previousBytes.lexicographicallyPrecedes(keyBytes)
        }
        return text(previous) < text(key)
    }

    /// Whether a field's key is `systemd_unit`, compared byte for byte with its escapes undone.
    private func isSystemdUnit(_ key: RecordLine.Text) -> Bool {
        let unit: StaticString = "systemd_unit"
        guard key.hasEscapes else { return bytes[key.range].elementsEqual(unit.utf8Bytes) }
        return EscapedString(escaped: ArraySlice(bytes[key.range]), hasEscapes: true).equals(unit)
    }

    /// The time the line's writer writes (`2026-11-21T10:00:00.123456Z`) read at fixed places, else any RFC 3339
    /// time ``Timestamp`` reads (as decoding the line does).
    private static func timestamp(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> Timestamp? {
        if let timestamp = Timestamp(canonicalRFC3339UTF8: UnsafeBufferPointer(rebasing: text)) { return timestamp }
        return Timestamp(rfc3339UTF8: ArraySlice(text))
    }

    /// The class the line names: the name the line's writer gives it, else any name ``PriorityClass`` reads (as
    /// decoding the line does).
    private static func priority(named name: Slice<UnsafeBufferPointer<UInt8>>) -> PriorityClass? {
        switch name.count {
        case 4 where name.elementsEqual(PriorityClass.info.staticName.utf8Bytes): return .info
        case 5 where name.elementsEqual(PriorityClass.crash.staticName.utf8Bytes): return .crash
        case 5 where name.elementsEqual(PriorityClass.error.staticName.utf8Bytes): return .error
        case 5 where name.elementsEqual(PriorityClass.debug.staticName.utf8Bytes): return .debug
        case 7 where name.elementsEqual(PriorityClass.warning.staticName.utf8Bytes): return .warning
        default: return PriorityClass(name: String(decoding: name, as: UTF8.self))
        }
    }

    private static func source(named name: Slice<UnsafeBufferPointer<UInt8>>) -> LogRecord.Source? {
        let source: LogRecord.Source? =
            switch name.first {
            case UInt8(ascii: "s"): .socket
            case UInt8(ascii: "j"): .journal
            case UInt8(ascii: "d"): .datagram
            case UInt8(ascii: "c"): .control
            default: nil
            }
        return source.flatMap { $0.staticName.utf8Bytes.elementsEqual(name) ? $0 : nil }
    }

    private func peek() -> UInt8? { index < bytes.endIndex ? bytes[index] : nil }

    private func failure(_ expected: String, at position: Int) -> RecordLineError {
        RecordLineError(offset: position, expected: expected)
    }

    /// Consumes `literal` if the bytes from the cursor on are it: compared eight bytes at a time, since every
    /// key of every line is one.
    @inline(__always)
    private mutating func skip(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.endIndex - index >= count, let base = bytes.baseAddress else { return false }
        let here = UnsafeRawPointer(base + index), expected = UnsafeRawPointer(literal.utf8Start)
        var offset = 0
        while offset + 8 <= count {
            guard here.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                == expected.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            else { return false }
            offset += 8
        }
        while offset < count {
            guard here.load(fromByteOffset: offset, as: UInt8.self)
                == expected.load(fromByteOffset: offset, as: UInt8.self)
            else { return false }
            offset += 1
        }
        index += count
        return true
    }

    @inline(__always)
    private mutating func expect(_ literal: StaticString) throws(RecordLineError) {
        guard skip(literal) else { throw failure("`\(literal)`", at: index) }
    }

    /// A JSON integer in `range`, as JSON writes one: no leading zero, no sign but `-`, no fraction.
    private mutating func integer(
        in range: ClosedRange<Int64>
    ) throws(RecordLineError) -> (value: Int64, digits: Range<Int>) {
        let start = index
        let negative = skip("-")
        let firstDigit = index
        var magnitude: Int64 = 0
        while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), index - firstDigit < 18 {
            magnitude = magnitude * 10 + Int64(byte - UInt8(ascii: "0"))
            index += 1
        }
        let digitCount = index - firstDigit
        let value = negative ? -magnitude : magnitude
        guard digitCount > 0, digitCount == 1 || bytes[firstDigit] != UInt8(ascii: "0"), range.contains(value),
              !(peek().map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false)
        else { throw failure("an integer from \(range.lowerBound) to \(range.upperBound)", at: start) }
        return (value, start..<index)
    }

    /// A JSON string: valid UTF-8, control bytes escaped, only the escapes ``EscapedString`` knows.
    private mutating func string() throws(RecordLineError) -> RecordLine.Text {
        try expect("\"")
        let start = index
        var hasEscapes = false
        while true {
            skipPlainASCII()
            guard let byte = peek() else { throw failure("the string's closing quote", at: index) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return RecordLine.Text(range: start..<index - 1, hasEscapes: hasEscapes)
            case UInt8(ascii: "\\"):
                hasEscapes = true
                try escape()
            case 0..<0x20:
                throw failure("an escaped control character", at: index)
            case 0..<0x80:
                index += 1
            default:
                try utf8Sequence()
            }
        }
    }

    /// Skips ASCII bytes that are neither a quote, a backslash nor a control byte, eight at a time: most of a
    /// line is such bytes.
    private mutating func skipPlainASCII() {
        guard let base = bytes.baseAddress else { return }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while index + 8 <= bytes.count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            // As JSONLineWriter.needsEscape, and a byte with its high bit set (UTF-8 beyond ASCII) stops too.
            let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
            let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            let found = ((word &- ones &* 0x20) & ~word) | ((quote &- ones) & ~quote)
                | ((backslash &- ones) & ~backslash) | word
            // The lowest flagged byte is the first that stops (a false flag only follows a true one).
            if found & highs != 0 {
                index += (found & highs).trailingZeroBitCount / 8
                return
            }
            index += 8
        }
    }

    /// One escape, from its backslash.
    private mutating func escape() throws(RecordLineError) {
        let start = index
        guard let letter = peek(at: 1) else { throw failure("an escape", at: start) }
        if letter == UInt8(ascii: "u") {
            // `\u00XX` for an ASCII byte: what the line's writer makes of a control byte.
            guard peek(at: 2) == UInt8(ascii: "0"), peek(at: 3) == UInt8(ascii: "0"),
                  let high = peek(at: 4), (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(high),
                  let low = peek(at: 5), Self.isHexDigit(low)
            else { throw failure("`\\u00` and an ASCII code", at: start) }
            index += 6
        } else {
            guard EscapedString.escapedByte(letter) != nil else { throw failure("an escape", at: start) }
            index += 2
        }
    }

    /// One UTF-8 sequence of two to four bytes, from its first: no overlong form, no surrogate, nothing past U+10FFFF.
    private mutating func utf8Sequence() throws(RecordLineError) {
        let start = index
        let lead = bytes[index]
        let (count, secondRange): (Int, ClosedRange<UInt8>) =
            switch lead {
            case 0xC2...0xDF: (2, 0x80...0xBF)
            case 0xE0: (3, 0xA0...0xBF)
            case 0xE1...0xEC, 0xEE...0xEF: (3, 0x80...0xBF)
            case 0xED: (3, 0x80...0x9F)
            case 0xF0: (4, 0x90...0xBF)
            case 0xF1...0xF3: (4, 0x80...0xBF)
            case 0xF4: (4, 0x80...0x8F)
            default: (0, 0...0)
            }
        guard count > 0, let second = peek(at: 1), secondRange.contains(second) else {
            throw failure("UTF-8", at: start)
        }
        for offset in 2..<max(count, 2) {
            guard let next = peek(at: offset), (0x80...0xBF).contains(next) else { throw failure("UTF-8", at: start) }
        }
        index += count
    }

    private func peek(at offset: Int) -> UInt8? {
        index + offset < bytes.endIndex ? bytes[index + offset] : nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}
