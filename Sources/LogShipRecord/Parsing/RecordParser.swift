/// Turns one frame into a ``LogRecord``, or straight into its NDJSON line (``encode(_:source:peer:receivedAt:)``):
/// JSON object lines, RFC 5424 and RFC 3164 syslog messages, sd-daemon `<N>` prefixes, and plain text.
///
/// Parsing never fails: anything that is not a recognised form is kept as plain text, invalid UTF-8 is replaced
/// with U+FFFD, and the sender's identity comes from the caller (the kernel), never from the payload.
public struct RecordParser: Sendable {
    /// The host name stamped on every record.
    public var hostname: String

    public init(hostname: String) {
        self.hostname = hostname
    }

    /// Parses a frame.
    ///
    /// - Parameters:
    ///   - frame: The record's bytes.
    ///   - source: The input it arrived on.
    ///   - peer: The sender's credentials as the kernel reported them.
    ///   - receivedAt: When it arrived; used when the payload carries no timestamp.
    public func parse(
        _ frame: Frame,
        source: LogRecord.Source,
        peer: PeerCredentials?,
        receivedAt: Timestamp
    ) -> LogRecord {
        record(of: frame.content, truncated: frame.truncated, source: source, peer: peer, receivedAt: receivedAt)
    }

    /// The record of a frame's ``Frame/content``; `truncated` is the frame's.
    func record(
        of content: ArraySlice<UInt8>, truncated: Bool, source: LogRecord.Source, peer: PeerCredentials?,
        receivedAt: Timestamp
    ) -> LogRecord {
        if content.first == UInt8(ascii: "{"), let object = JSONLineParser.parseObject(content) {
            var record = plain("", source: source, peer: peer, receivedAt: receivedAt, truncated: truncated)
            JSONLineParser.apply(object, rawLine: content, to: &record)
            return record
        }
        if let syslog = SyslogParser.parse(content, receivedAt: receivedAt) {
            return syslog.record(
                localHostname: hostname, source: source, peer: peer, receivedAt: receivedAt, truncated: truncated)
        }
        return plain(
            String(decoding: content, as: UTF8.self), source: source, peer: peer, receivedAt: receivedAt,
            truncated: truncated)
    }

    /// A record with `message` and nothing read from the payload: stamped when it arrived, informational.
    private func plain(
        _ message: String, source: LogRecord.Source, peer: PeerCredentials?, receivedAt: Timestamp, truncated: Bool
    ) -> LogRecord {
        LogRecord(
            timestamp: receivedAt, priority: .info, severity: .informational, host: hostname, source: source,
            message: message, peer: peer, truncated: truncated)
    }
}

extension Frame {
    /// The record's bytes without the line ending and without a character the size cut left incomplete: what
    /// the parsers read.
    var content: ArraySlice<UInt8> {
        (truncated ? bytes[...].droppingIncompleteUTF8Suffix() : bytes[...]).trimmingLineEnding()
    }
}

extension ArraySlice<UInt8> {
    /// Whether every byte is ASCII; eight at a time, since nearly every line is.
    var isASCII: Bool {
        withUnsafeBytes { raw in
            var offset = 0
            while offset + 8 <= raw.count {
                if raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 {
                    return false
                }
                offset += 8
            }
            while offset < raw.count {
                if raw[offset] >= 0x80 { return false }
                offset += 1
            }
            return true
        }
    }

    /// Drops a trailing newline (LF or CRLF) and trailing NULs, which some syslog clients append.
    package func trimmingLineEnding() -> ArraySlice<UInt8> {
        var slice = self
        while let last = slice.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") || last == 0 {
            slice = slice.dropLast()
        }
        return slice
    }

    /// Drops a multi-byte UTF-8 sequence that a size cut left incomplete, so the cut does not become U+FFFD.
    package func droppingIncompleteUTF8Suffix() -> ArraySlice<UInt8> {
        var leadIndex = endIndex
        var continuationCount = 0
        // A UTF-8 sequence is at most four bytes: look back at most three continuation bytes for its lead.
        while leadIndex > startIndex, continuationCount < 4 {
            leadIndex -= 1
            let byte = self[leadIndex]
            if byte & 0xC0 != 0x80 { break }
            continuationCount += 1
        }
        guard leadIndex < endIndex else { return self }
        let lead = self[leadIndex]
        let expectedLength: Int
        switch lead {
        case 0xC0...0xDF: expectedLength = 2
        case 0xE0...0xEF: expectedLength = 3
        case 0xF0...0xF7: expectedLength = 4
        default: return self
        }
        return endIndex - leadIndex < expectedLength ? self[startIndex..<leadIndex] : self
    }
}
