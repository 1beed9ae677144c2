/// Reads the syslog forms ``SyslogMessage`` describes: RFC 5424, RFC 3164 and the sd-daemon prefix.
enum SyslogParser {
    /// Parses a syslog message; `nil` when `bytes` does not start with a valid `<PRI>`.
    static func parse(_ bytes: ArraySlice<UInt8>, receivedAt: Timestamp) -> SyslogMessage? {
        var scanner = ByteScanner(bytes)
        guard let priority = parsePriority(&scanner) else { return nil }
        let severity = Severity(rawValue: priority & 7)!
        let afterPriority = scanner.index

        if scanner.skip(UInt8(ascii: "1")), scanner.skip(UInt8(ascii: " ")),
            let message = parseRFC5424(&scanner, severity: severity, facility: priority >> 3)
        {
            return message
        }
        scanner.seek(to: afterPriority)
        if let message = parseRFC3164(&scanner, severity: severity, facility: priority >> 3, receivedAt: receivedAt) {
            return SyslogMessage(message, in: bytes)
        }
        scanner.seek(to: afterPriority)
        // No header after the PRI: the sd-daemon form (`<3>text`, one digit 0-7, no facility), or a client that
        // sends only `<PRI>message` (Python's SysLogHandler), whose facility is kept.
        let facility = priority > 7 || afterPriority - bytes.startIndex > 3 ? priority >> 3 : nil
        return SyslogMessage(severity: severity, facility: facility, message: text(scanner.remaining))
    }

    /// `<PRI>`: one to three digits, no leading zero unless the value is 0, at most 191.
    private static func parsePriority(_ scanner: inout ByteScanner) -> Int? {
        guard scanner.skip(UInt8(ascii: "<")) else { return nil }
        var value = 0
        var count = 0
        let first = scanner.peek()
        while let digit = scanner.digit() {
            value = value * 10 + digit
            count += 1
            if count > 3 { return nil }
        }
        guard count > 0, scanner.skip(UInt8(ascii: ">")), value <= 191 else { return nil }
        if count > 1 && first == UInt8(ascii: "0") { return nil }
        return value
    }

    // MARK: RFC 5424

    private static func parseRFC5424(
        _ scanner: inout ByteScanner, severity: Severity, facility: Int
    ) -> SyslogMessage? {
        guard
            let timestampToken = scanner.token(), scanner.skip(UInt8(ascii: " ")),
            let hostname = scanner.token(), scanner.skip(UInt8(ascii: " ")),
            let appName = scanner.token(), scanner.skip(UInt8(ascii: " ")),
            let processID = scanner.token(), scanner.skip(UInt8(ascii: " ")),
            let messageID = scanner.token(), scanner.skip(UInt8(ascii: " "))
        else { return nil }

        var timestamp: Timestamp?
        if !isNil(timestampToken) {
            guard let parsed = Timestamp(rfc3339: text(timestampToken)) else { return nil }
            timestamp = parsed
        }
        guard let structuredData = parseStructuredData(&scanner) else { return nil }
        _ = scanner.skip(UInt8(ascii: " "))
        var message = scanner.remaining
        if message.starts(with: [0xEF, 0xBB, 0xBF]) {
            message = message.dropFirst(3)
        }
        return SyslogMessage(
            severity: severity,
            facility: facility,
            timestamp: timestamp,
            hostname: optionalText(hostname),
            identifier: optionalText(appName),
            processID: optionalText(processID),
            messageID: optionalText(messageID),
            structuredData: structuredData,
            message: text(message))
    }

    /// `-` or one or more `[SD-ID PARAM="VALUE" …]` elements; each parameter becomes a field `SD-ID.PARAM`.
    private static func parseStructuredData(_ scanner: inout ByteScanner) -> RecordFields? {
        if scanner.skip(UInt8(ascii: "-")) { return [:] }
        // Collected, then sorted once: a line may carry thousands of parameters in any order.
        var fields: [(String, String)] = []
        guard scanner.peek() == UInt8(ascii: "[") else { return nil }
        while scanner.skip(UInt8(ascii: "[")) {
            guard let id = scanner.name(terminators: [UInt8(ascii: " "), UInt8(ascii: "]")]) else { return nil }
            while scanner.skip(UInt8(ascii: " ")) {
                guard
                    let parameter = scanner.name(terminators: [UInt8(ascii: "=")]),
                    scanner.skip(UInt8(ascii: "=")), scanner.skip(UInt8(ascii: "\""))
                else { return nil }
                var value: [UInt8] = []
                while true {
                    guard let byte = scanner.next() else { return nil }
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == UInt8(ascii: "\\"), let escaped = scanner.peek(),
                        escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") || escaped == UInt8(ascii: "]")
                    {
                        value.append(escaped)
                        _ = scanner.next()
                        continue
                    }
                    value.append(byte)
                }
                fields.append(("\(text(id)).\(text(parameter))", String(decoding: value, as: UTF8.self)))
            }
            guard scanner.skip(UInt8(ascii: "]")) else { return nil }
        }
        return RecordFields(fields)
    }

    // MARK: RFC 3164

    /// The parts of `bytes` as an RFC 3164 message, or `nil` when ``parse(_:receivedAt:)`` would read it in
    /// another form or not at all.
    ///
    /// `parse` tries RFC 5424 first, but the two cannot both match: after the PRI, RFC 5424 has its version
    /// (`1 `), RFC 3164 a month's name.
    static func parseRFC3164(_ bytes: ArraySlice<UInt8>, receivedAt: Timestamp) -> RFC3164Message? {
        var scanner = ByteScanner(bytes)
        guard let priority = parsePriority(&scanner) else { return nil }
        return parseRFC3164(
            &scanner, severity: Severity(rawValue: priority & 7)!, facility: priority >> 3, receivedAt: receivedAt)
    }

    /// The month (1-12) whose abbreviation is next in `scanner`, or `nil`; consumes nothing.
    private static func month(at scanner: ByteScanner) -> Int? {
        guard let first = scanner.peek(), let second = scanner.peek(at: 1), let third = scanner.peek(at: 2) else {
            return nil
        }
        // The three letters as one number, so that one switch finds the month.
        return switch UInt32(first) << 16 | UInt32(second) << 8 | UInt32(third) {
        case 0x4A_61_6E: 1  // Jan
        case 0x46_65_62: 2  // Feb
        case 0x4D_61_72: 3  // Mar
        case 0x41_70_72: 4  // Apr
        case 0x4D_61_79: 5  // May
        case 0x4A_75_6E: 6  // Jun
        case 0x4A_75_6C: 7  // Jul
        case 0x41_75_67: 8  // Aug
        case 0x53_65_70: 9  // Sep
        case 0x4F_63_74: 10  // Oct
        case 0x4E_6F_76: 11  // Nov
        case 0x44_65_63: 12  // Dec
        default: nil
        }
    }

    /// `Mmm dd hh:mm:ss [HOSTNAME ]TAG[PID]: MSG`. The host name is optional because local clients (`logger -u`
    /// without `--rfc3164`, glibc `syslog()`) leave it out: a first word that already ends the tag is the tag.
    private static func parseRFC3164(
        _ scanner: inout ByteScanner, severity: Severity, facility: Int, receivedAt: Timestamp
    ) -> RFC3164Message? {
        let start = scanner.index
        guard scanner.remainingCount >= 16, let month = month(at: scanner) else { return nil }
        scanner.seek(to: start + 3)
        guard scanner.skip(UInt8(ascii: " ")) else { return nil }
        _ = scanner.skip(UInt8(ascii: " "))  // day padded with a space ("Nov  1")
        var day = 0
        var dayDigits = 0
        // At most one digit more than a day has, so a run of digits can neither overflow nor pass.
        while dayDigits < 3, let digit = scanner.digit() {
            day = day * 10 + digit
            dayDigits += 1
        }
        guard (1...2).contains(dayDigits), (1...31).contains(day), scanner.skip(UInt8(ascii: " ")),
            let hour = scanner.digits(2), scanner.skip(UInt8(ascii: ":")),
            let minute = scanner.digits(2), scanner.skip(UInt8(ascii: ":")),
            let second = scanner.digits(2), hour < 24, minute < 60, second < 61,
            scanner.skip(UInt8(ascii: " ")) || scanner.isAtEnd
        else { return nil }

        let timestamp = inferYear(month: month, day: day, hour: hour, minute: minute, second: second,
                                  receivedAt: receivedAt)
        let end = scanner.bytes.endIndex
        var message = RFC3164Message(severity: severity, facility: facility, timestamp: timestamp, message: end..<end)

        let headerStart = scanner.index
        if let first = scanner.tokenRange() {
            if let tag = parseTag(first, in: scanner.bytes) {
                (message.identifier, message.processID) = tag
            } else if scanner.skip(UInt8(ascii: " ")), let second = scanner.tokenRange(),
                let tag = parseTag(second, in: scanner.bytes)
            {
                message.hostname = first
                (message.identifier, message.processID) = tag
            } else {
                scanner.seek(to: headerStart)
            }
        }
        _ = scanner.skip(UInt8(ascii: " "))
        message.message = min(scanner.index, end)..<end
        return message
    }

    /// `TAG:` or `TAG[PID]:`; `nil` if the token at `token` in `bytes` is not a tag.
    private static func parseTag(
        _ token: Range<Int>, in bytes: ArraySlice<UInt8>
    ) -> (identifier: Range<Int>, processID: Range<Int>?)? {
        guard let colon = token.last, bytes[colon] == UInt8(ascii: ":") else { return nil }
        let body = token.lowerBound..<colon
        if let open = body.first(where: { bytes[$0] == UInt8(ascii: "[") }) {
            guard bytes[colon - 1] == UInt8(ascii: "]"), open > body.lowerBound else { return nil }
            let processID = (open + 1)..<(colon - 1)
            return (body.lowerBound..<open, processID.isEmpty ? nil : processID)
        }
        guard !body.isEmpty else { return nil }
        return (body, nil)
    }

    /// RFC 3164 timestamps have no year: take the year that puts the message closest to its arrival.
    ///
    /// The year of arrival is tried first: within 180 days of the arrival it is the closest (another year's is at
    /// least 364 days from it), which spares converting the other two for nearly every line.
    private static func inferYear(
        month: Int, day: Int, hour: Int, minute: Int, second: Int, receivedAt: Timestamp
    ) -> Timestamp? {
        func distance(_ candidate: Timestamp) -> Int64 {
            abs(candidate.microsecondsSinceEpoch - receivedAt.microsecondsSinceEpoch)
        }
        let year = receivedAt.utcYear
        var closest = Timestamp.local(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        if let sameYear = closest, distance(sameYear) < 180 * 86_400 * 1_000_000 { return sameYear }
        // Ties go to the earlier year, as they always have.
        for (other, winsTies) in [(year - 1, true), (year + 1, false)] {
            guard let candidate = Timestamp.local(
                year: other, month: month, day: day, hour: hour, minute: minute, second: second)
            else { continue }
            let closer = closest.map {
                winsTies ? distance(candidate) <= distance($0) : distance(candidate) < distance($0)
            }
            if closer ?? true { closest = candidate }
        }
        return closest
    }

    // MARK: Helpers

    private static func isNil(_ token: ArraySlice<UInt8>) -> Bool {
        token.count == 1 && token.first == UInt8(ascii: "-")
    }

    private static func optionalText(_ token: ArraySlice<UInt8>) -> String? {
        isNil(token) ? nil : text(token)
    }

    static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

/// An RFC 3164 message's header and text, as where they are in the bytes it was parsed from: what
/// ``RecordParser/encode(_:source:peer:receivedAt:)`` writes into NDJSON without making strings.
///
/// Indices rather than slices: a slice holds its array, and every copy of the message retained it four times and
/// released it as often (BENCHMARKS.md's Measured choices has what that cost).
struct RFC3164Message {
    var severity: Severity
    var facility: Int
    /// `nil` for a date that exists in none of the years tried (`Feb 30`).
    var timestamp: Timestamp?
    var hostname: Range<Int>?
    var identifier: Range<Int>?
    var processID: Range<Int>?
    var message: Range<Int>
}

extension ByteScanner {
    /// An SD-NAME: printable ASCII up to one of `terminators`, without `=`, `]`, `"` or spaces.
    fileprivate mutating func name(terminators: [UInt8]) -> ArraySlice<UInt8>? {
        let start = index
        while let byte = peek(), !terminators.contains(byte) {
            guard byte > 32, byte < 127, byte != UInt8(ascii: "="), byte != UInt8(ascii: "]"),
                byte != UInt8(ascii: "\"")
            else { return nil }
            _ = next()
        }
        return index > start ? bytes[start..<index] : nil
    }
}
