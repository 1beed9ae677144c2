#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A point in time with microsecond precision, as records carry it on the wire.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z.
    public var microsecondsSinceEpoch: Int64

    /// The earliest and latest instants a timestamp holds: years 0000 to 9999, the years RFC 3339 can write.
    static let range: ClosedRange<Int64> = -62_167_219_200_000_000...253_402_300_799_999_999

    /// An instant, clamped to years 0000–9999 so that every timestamp writes as RFC 3339 and reads back: a
    /// sender's time of year −1 or 10000 must not make a record that no encoder can read again.
    public init(microsecondsSinceEpoch: Int64) {
        self.microsecondsSinceEpoch = min(max(microsecondsSinceEpoch, Self.range.lowerBound), Self.range.upperBound)
    }

    /// The current wall-clock time.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(microsecondsSinceEpoch: Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000)
    }

    /// The length of ``rfc3339``.
    static let rfc3339Length = 27

    /// RFC 3339 in UTC with exactly six fraction digits: `2026-11-21T10:00:00.123456Z`.
    public var rfc3339: String {
        String(unsafeUninitializedCapacity: Self.rfc3339Length) { writeRFC3339(into: $0) }
    }

    /// Writes ``rfc3339`` at the start of `buffer`, which must have room for ``rfc3339Length`` bytes; returns how
    /// many it wrote. The NDJSON writer puts one in every line this way, without making a string.
    func writeRFC3339(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        precondition(buffer.count >= Self.rfc3339Length, "no room for an RFC 3339 timestamp")
        let fields = utcFields
        var count = 0
        func put(_ separator: Unicode.Scalar) {
            buffer[count] = UInt8(ascii: separator)
            count += 1
        }
        func put(_ value: Int, width: Int) {
            var remaining = value
            for position in stride(from: width - 1, through: 0, by: -1) {
                buffer[count + position] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            count += width
        }
        put(fields.year, width: 4)
        put("-")
        put(fields.month, width: 2)
        put("-")
        put(fields.day, width: 2)
        put("T")
        put(fields.hour, width: 2)
        put(":")
        put(fields.minute, width: 2)
        put(":")
        put(fields.second, width: 2)
        put(".")
        put(fields.microsecond, width: 6)
        put("Z")
        return count
    }

    /// The calendar date and time in UTC: what RFC 3339 writes (years 0000–9999, as every timestamp is).
    var utcFields: (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, microsecond: Int) {
        let (seconds, micros) = microsecondsSinceEpoch.floorDivided(by: 1_000_000)
        let (days, secondOfDay) = seconds.floorDivided(by: 86_400)
        let date = CivilDate(daysSinceEpoch: days)
        return (date.year, date.month, date.day, Int(secondOfDay / 3600), Int(secondOfDay / 60 % 60),
                Int(secondOfDay % 60), Int(micros))
    }

    public var description: String { rfc3339 }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch
    }
}

extension Timestamp {
    /// Parses an RFC 3339 timestamp (`2026-11-21T05:06:08.772391+00:00`, `…Z`); fractions beyond microseconds are
    /// cut. Returns `nil` for anything else.
    public init?(rfc3339 text: some StringProtocol) {
        self.init(rfc3339UTF8: Array(text.utf8)[...])
    }

    /// Parses the UTF-8 bytes of an RFC 3339 timestamp in place, as ``init(rfc3339:)`` parses text.
    package init?(rfc3339UTF8 bytes: ArraySlice<UInt8>) {
        var scanner = ByteScanner(bytes)
        guard
            let year = scanner.digits(4), scanner.skip(UInt8(ascii: "-")),
            let month = scanner.digits(2), scanner.skip(UInt8(ascii: "-")),
            let day = scanner.digits(2), scanner.skip(anyOf: [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")]),
            let hour = scanner.digits(2), scanner.skip(UInt8(ascii: ":")),
            let minute = scanner.digits(2), scanner.skip(UInt8(ascii: ":")),
            let second = scanner.digits(2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }

        var micros: Int64 = 0
        if scanner.skip(UInt8(ascii: ".")) {
            var scale: Int64 = 100_000
            var sawDigit = false
            while let digit = scanner.digit() {
                sawDigit = true
                micros += Int64(digit) * scale
                scale /= 10
            }
            guard sawDigit else { return nil }
        }

        var offsetSeconds: Int64 = 0
        if scanner.skip(anyOf: [UInt8(ascii: "Z"), UInt8(ascii: "z")]) {
            offsetSeconds = 0
        } else if let sign = scanner.next(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            guard let hours = scanner.digits(2), scanner.skip(UInt8(ascii: ":")), let minutes = scanner.digits(2) else {
                return nil
            }
            offsetSeconds = Int64(hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
        } else {
            return nil
        }
        guard scanner.isAtEnd else { return nil }

        let days = CivilDate(year: year, month: month, day: day).daysSinceEpoch
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - offsetSeconds
        self.init(microsecondsSinceEpoch: seconds * 1_000_000 + micros)
    }

    /// Reads ``rfc3339`` as the NDJSON writer writes it (`2026-11-21T10:00:00.123456Z`, ``rfc3339Length`` bytes)
    /// at its fixed places, to the same instant ``init(rfc3339UTF8:)`` reads; `nil` for any other shape.
    package init?(canonicalRFC3339UTF8 bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count == Self.rfc3339Length, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              bytes[19] == UInt8(ascii: "."), bytes[26] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              let micros = number(20..<26),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        let days = CivilDate(year: year, month: month, day: day).daysSinceEpoch
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59))
        self.init(microsecondsSinceEpoch: seconds * 1_000_000 + Int64(micros))
    }

    /// Interprets a calendar time without a zone (as RFC 3164 carries it) in the host's local time zone.
    ///
    /// Gives what `mktime` gives, without calling it: `mktime` calls `tzset`, which looks at `/etc/localtime`
    /// again on every call, three times per RFC 3164 line (one per candidate year). `localtime_r` reads the zone
    /// once per process. The offsets a day before and after are the candidates; a wall time that occurs twice
    /// (clocks set back) is the earlier instant, one that a change skips is read with the offset before it.
    static func local(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Timestamp? {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second)
        else { return nil }
        let wall = CivilDate(year: year, month: month, day: day).daysSinceEpoch * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
        if let steady = steadyOffset.withLock({ $0 }), steady.contains(wall) {
            return Timestamp(microsecondsSinceEpoch: (wall - steady.offset) * 1_000_000)
        }
        let before = utcOffset(at: wall - 86_400)
        let after = utcOffset(at: wall + 86_400)
        // No change of offset within a day either side: the only candidate (the common path).
        if before == after {
            steadyOffset.withLock { $0 = SteadyOffset(around: wall, offset: before) }
            return Timestamp(microsecondsSinceEpoch: (wall - before) * 1_000_000)
        }
        let consistent = [wall - before, wall - after].filter { wall - utcOffset(at: $0) == $0 }
        let seconds = consistent.min() ?? wall - before
        return Timestamp(microsecondsSinceEpoch: seconds * 1_000_000)
    }

    /// A stretch of wall-clock time found to have one offset from UTC: the last one `local` met.
    ///
    /// The offsets a day either side of a wall time being equal, the zone is taken not to change between them
    /// (which `local` assumes anyway); a later wall time that `local` would read from the same stretch, within
    /// ten hours of it (the farthest a zone's offset can move an instant), gets the same answer without two calls
    /// to `localtime_r`. Lines of a burst share their timestamps' hour, so this is nearly every line.
    private struct SteadyOffset {
        var around: Int64
        var offset: Int64

        func contains(_ wall: Int64) -> Bool { abs(wall - around) <= 36_000 }
    }

    private static let steadyOffset = Mutex<SteadyOffset?>(nil)

    /// The local zone's offset from UTC, in seconds, at `seconds` since the epoch.
    private static func utcOffset(at seconds: Int64) -> Int64 {
        var time = time_t(seconds)
        var fields = tm()
        guard localtime_r(&time, &fields) != nil else { return 0 }
        return Int64(fields.tm_gmtoff)
    }

    /// The calendar year of this instant in UTC.
    var utcYear: Int {
        let (seconds, _) = microsecondsSinceEpoch.floorDivided(by: 1_000_000)
        return CivilDate(daysSinceEpoch: seconds.floorDivided(by: 86_400).quotient).year
    }
}

/// A proleptic Gregorian date, converted with Howard Hinnant's days-from-civil algorithms.
private struct CivilDate {
    var year: Int
    var month: Int
    var day: Int

    init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    init(daysSinceEpoch: Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
    }

    var daysSinceEpoch: Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = (self >= 0 ? self : self - (divisor - 1)) / divisor
        return (quotient, self - quotient * divisor)
    }
}

extension Timestamp {
    /// The instant `date` stands for, to the microsecond.
    public init(_ date: Date) {
        self.init(microsecondsSinceEpoch: Int64((date.timeIntervalSince1970 * 1_000_000).rounded()))
    }
}
