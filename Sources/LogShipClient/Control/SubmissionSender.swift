/// What `logctl send` does: wraps messages in submissions and sends them to the daemon in acknowledged chunks.
public struct SubmissionSender {
    /// Lines per request; requests stay well under the daemon's request limit.
    static let chunkRecords = 1000
    /// Encoded bytes per request: a quarter of the daemon's limit, counted after JSON escaping.
    static let chunkBytes = ControlProtocol.maximumRequestBytes / 4
    /// logctl's own cut for a stdin line, so a huge line never has to fit in memory whole; the daemon applies
    /// its (usually smaller) record limit on top.
    public static let maximumLineBytes = 1 << 20
    /// What one submission may take in a request, escaped: a message longer than that is cut (and marked) here,
    /// so that one record always fits in one request.
    static let maximumSubmissionBytes = ControlProtocol.maximumRequestBytes - (64 << 10)

    private let path: String
    private let priority: String
    private let fields: [String: String]?

    public init(path: String, priority: String, fields: [String: String]?) {
        self.path = path
        self.priority = priority
        self.fields = fields
    }

    /// Sends messages in one request.
    ///
    /// - Returns: How many crash records the daemon accepted as errors, beyond the sender's crash budget.
    /// - Throws: ``ControlClientError`` or ``SendError`` with the one line to print.
    @discardableResult
    public func send(_ messages: [String]) throws -> Int {
        let client = try ControlClient(path: path)
        let now = Timestamp.now().rfc3339
        return try send(messages.map { submission($0, truncated: false, at: now) }, with: client, acceptedBefore: 0)
            .demoted
    }

    /// Sends each line of `descriptor` that holds more than whitespace as a record, in chunks; a chunk goes as soon
    /// as no more input is ready, so `tail -f | logctl send` ships promptly.
    ///
    /// - Returns: How many crash records the daemon accepted as errors, beyond the sender's crash budget.
    @discardableResult
    public func sendLines(fromDescriptor descriptor: Int32) throws -> Int {
        let client = try ControlClient(path: path)
        let reader = LineReader(descriptor: descriptor, maximumLineBytes: Self.maximumLineBytes)
        var chunk: [Submission] = []
        var chunkBytes = 0
        var accepted = 0
        var demoted = 0
        func sendChunk() throws {
            let answer = try send(chunk, with: client, acceptedBefore: accepted)
            accepted += answer.accepted
            demoted += answer.demoted
            chunk.removeAll(keepingCapacity: true)
            chunkBytes = 0
        }
        while let line = try reader.next() {
            let text = String(decoding: line.bytes[...].trimmingLineEnding(), as: UTF8.self)
            // A line with nothing but whitespace is no record, as on the ingest sockets.
            guard text.contains(where: { !$0.isWhitespace }) else { continue }
            let encodedBytes = Self.encodedSizeBound(of: text) + submissionOverhead
            if !chunk.isEmpty && chunkBytes + encodedBytes > Self.chunkBytes {
                try sendChunk()
            }
            chunk.append(submission(text, truncated: line.truncated, at: Timestamp.now().rfc3339))
            chunkBytes += encodedBytes
            if chunk.count >= Self.chunkRecords || chunkBytes >= Self.chunkBytes || !reader.hasInputReady {
                try sendChunk()
            }
        }
        if !chunk.isEmpty {
            try sendChunk()
        }
        return demoted
    }

    /// What each submission adds to its message in the request: its keys, priority, timestamp and the
    /// `--field`s, which every submission repeats.
    private var submissionOverhead: Int {
        let fieldBytes = (fields ?? [:]).reduce(0) {
            $0 + Self.encodedSizeBound(of: $1.key) + Self.encodedSizeBound(of: $1.value) + 6
        }
        return 160 + Self.encodedSizeBound(of: priority) + fieldBytes
    }

    /// At most how many bytes `text` takes in the request's JSON: a control character can become `\u00XX`
    /// (six bytes for one), `"`, `\\` and `/` two, and a non-ASCII byte is counted twice in case the encoder
    /// escapes it. Counting raw bytes instead let a chunk of control characters grow past the request limit.
    static func encodedSizeBound(of text: String) -> Int {
        text.utf8.reduce(0) { $0 + encodedSizeBound(of: $1) }
    }

    private static func encodedSizeBound(of byte: UInt8) -> Int {
        switch byte {
        case 0..<0x20: 6
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), 0x80...: 2
        default: 1
        }
    }

    private func submission(_ message: String, truncated: Bool, at timestamp: String) -> Submission {
        let (fitted, cut) = Self.cut(message, toEncodedBytes: Self.maximumSubmissionBytes - submissionOverhead)
        return Submission(
            message: fitted, priority: priority, fields: fields, timestamp: timestamp,
            truncated: truncated || cut ? true : nil)
    }

    /// The longest prefix of `text` whose encoding takes at most `budget` bytes (see ``encodedSizeBound(of:)``),
    /// without a broken last character; and whether anything was cut.
    static func cut(_ text: String, toEncodedBytes budget: Int) -> (String, Bool) {
        guard encodedSizeBound(of: text) > budget else { return (text, false) }
        var kept = 0
        var bytes = 0
        for byte in text.utf8 {
            bytes += encodedSizeBound(of: byte)
            guard bytes <= budget else { break }
            kept += 1
        }
        return (
            String(decoding: Array(text.utf8.prefix(kept))[...].droppingIncompleteUTF8Suffix(), as: UTF8.self), true
        )
    }

    private func send(
        _ submissions: [Submission], with client: ControlClient, acceptedBefore: Int
    ) throws -> (accepted: Int, demoted: Int) {
        let response = try client.send(ControlRequest(command: .send, records: submissions))
        guard response.ok else {
            let reason = response.error ?? "records not accepted"
            let accepted = acceptedBefore + (response.accepted ?? 0)
            throw SendError(
                description: accepted > 0 ? "\(reason) (\(accepted) earlier record(s) were accepted)" : reason)
        }
        return (response.accepted ?? submissions.count, response.demoted ?? 0)
    }
}

/// The daemon did not accept what `logctl send` sent.
public struct SendError: Error, CustomStringConvertible {
    public let description: String
}
