/// A parsed record ready for the spool: its class and its NDJSON line, and whether it was cut, which intake
/// counts.
public struct EncodedRecord: Hashable, Sendable {
    public private(set) var priority: PriorityClass
    /// The record's ``LogRecord/ndjsonLine``.
    public private(set) var line: [UInt8]
    /// Whether the message was cut at the size limit.
    public private(set) var truncated: Bool
    /// The sender's uid, as the kernel reports it; `nil` when it reported none.
    public private(set) var sender: UInt32?
    /// The record itself when its sender claims the crash class, which intake may take back
    /// (``demotingCrashClaim()``); `nil` for every other record, which is only ever stored as its line.
    public var crashClaim: LogRecord? { claim?.record }
    /// Boxed: a record inline would make every encoded record large and costly to copy, for the few that claim
    /// crash (BENCHMARKS.md, Measured choices).
    private var claim: CrashClaim?

    public init(priority: PriorityClass, line: [UInt8], truncated: Bool, sender: UInt32? = nil) {
        self.priority = priority
        self.line = line
        self.truncated = truncated
        self.sender = sender
    }

    public init(_ record: LogRecord) {
        self.init(
            priority: record.priority, line: record.ndjsonLine, truncated: record.truncated, sender: record.peer?.uid)
        if record.priority == .crash { claim = CrashClaim(record: record) }
    }

    /// The same record as a crash claim beyond its sender's budget: its content kept, stored as an error and
    /// marked (``LogRecord/demotingCrashClaim()``). A record that claims no crash is returned as it is.
    public func demotingCrashClaim() -> EncodedRecord {
        guard let crashClaim else { return self }
        return EncodedRecord(crashClaim.demotingCrashClaim())
    }
}

/// A sender's crash claim kept with its encoded line, compared by the record it holds.
private final class CrashClaim: Hashable, Sendable {
    let record: LogRecord

    init(record: LogRecord) {
        self.record = record
    }

    static func == (lhs: CrashClaim, rhs: CrashClaim) -> Bool { lhs.record == rhs.record }

    func hash(into hasher: inout Hasher) {
        hasher.combine(record)
    }
}

extension LogRecord {
    /// The field that marks a record whose sender claimed the crash class beyond its budget; its value is the
    /// class claimed.
    public static let demotedFromField = "demoted_from"

    /// The field that marks a JSON record whose fields beyond ``JSONLineParser/maximumFields`` were left in its
    /// message; its value is how many.
    public static let fieldsOverLimitField = "fields_over_limit"

    /// The record as its sender's crash claim beyond the budget leaves it: error class, the rest as sent, and a
    /// ``demotedFromField`` field saying so.
    public func demotingCrashClaim() -> LogRecord {
        guard priority == .crash else { return self }
        var record = self
        record.priority = .error
        record.fields[Self.demotedFromField] = PriorityClass.crash.description
        return record
    }
}

extension RecordParser {
    /// Parses a frame into the line the spool stores: the same bytes as `parse(…).ndjsonLine`, with the same
    /// parameters.
    ///
    /// What the ingest sockets receive most is an ASCII RFC 3164 line (`logger`, glibc `syslog()`). Its line is
    /// written straight from the frame's bytes, without the record's strings and fields: the parse and the
    /// encoding were half of what a socket line cost the daemon (`valgrind --tool=callgrind` of
    /// `logshipd-bench intake-cost`). Any other frame goes through ``parse(_:source:peer:receivedAt:)``.
    public func encode(
        _ frame: Frame, source: LogRecord.Source, peer: PeerCredentials?, receivedAt: Timestamp
    ) -> EncodedRecord {
        let content = frame.content
        if let encoded = encodeRFC3164(content, of: frame, source: source, peer: peer, receivedAt: receivedAt) {
            return encoded
        }
        return EncodedRecord(
            record(of: content, truncated: frame.truncated, source: source, peer: peer, receivedAt: receivedAt))
    }

    /// The line of an ASCII RFC 3164 frame, given its ``Frame/content``, or `nil` for any other, and for one
    /// whose sender names a host other than this one while this host's name is not ASCII. Internal for the
    /// tests, which check that it is taken.
    func encodeRFC3164(
        _ content: ArraySlice<UInt8>, of frame: Frame, source: LogRecord.Source, peer: PeerCredentials?,
        receivedAt: Timestamp
    ) -> EncodedRecord? {
        // ASCII only: `parse` replaces invalid UTF-8, which copying bytes would not. A JSON object line starts
        // with `{`, never with a PRI.
        guard content.first == UInt8(ascii: "<"), content.isASCII,
            let message = SyslogParser.parseRFC3164(content, receivedAt: receivedAt)
        else { return nil }
        let keepsHostname: Bool
        if let sent = message.hostname, !hostname.utf8.elementsEqual(content[sent]) {
            // `parse` compares strings, and Unicode finds some non-ASCII names equal to ASCII ones.
            guard hostname.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
            keepsHostname = true
        } else {
            keepsHostname = false
        }
        let priority = PriorityClass(severity: message.severity)
        let line = frame.bytes.withUnsafeBufferPointer { bytes in
            func text(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
                UnsafeBufferPointer(rebasing: bytes[range])
            }
            let fields = SyslogHeaderFields(
                facility: SyslogMessage.facilityNames[message.facility],
                hostname: keepsHostname ? message.hostname.map(text) : nil,
                identifier: message.identifier.map(text), processID: message.processID.map(text))
            return NDJSONLine.make(
                timestamp: message.timestamp ?? receivedAt, priority: priority, severity: message.severity,
                host: hostname, source: source, message: text(message.message), peer: peer, fields: fields,
                truncated: frame.truncated)
        }
        return EncodedRecord(priority: priority, line: line, truncated: frame.truncated, sender: peer?.uid)
    }
}

/// The fields an RFC 3164 header gives a record, in key order, as ``SyslogMessage`` sets them: the facility,
/// the host name the sender claims when it is not the local one, the tag and its PID.
private struct SyslogHeaderFields: Sequence {
    typealias Element = (key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)

    var facility: StaticString
    var hostname: UnsafeBufferPointer<UInt8>?
    var identifier: UnsafeBufferPointer<UInt8>?
    var processID: UnsafeBufferPointer<UInt8>?

    struct Iterator: IteratorProtocol {
        let fields: SyslogHeaderFields
        var position = 0

        mutating func next() -> Element? {
            while position < 4 {
                defer { position += 1 }
                switch position {
                case 0: return (Self.bytes("syslog_facility"), Self.bytes(fields.facility))
                case 1: if let value = fields.hostname { return (Self.bytes("syslog_hostname"), value) }
                case 2: if let value = fields.identifier { return (Self.bytes("syslog_identifier"), value) }
                default: if let value = fields.processID { return (Self.bytes("syslog_pid"), value) }
                }
            }
            return nil
        }

        private static func bytes(_ text: StaticString) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        }
    }

    func makeIterator() -> Iterator {
        Iterator(fields: self)
    }
}
