/// What `logctl send` does: wraps messages in submissions and sends them to the daemon in acknowledged chunks.
public struct SubmissionSender {
    /// Lines per request; requests stay well under the daemon's request limit.
    static let chunkRecords = 1000
    static let chunkBytes = 4 << 20
    /// logctl's own cut for a stdin line, so a huge line never has to fit in memory whole; the daemon applies
    /// its (usually smaller) record limit on top.
    public static let maximumLineBytes = 1 << 20

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
    /// - Throws: ``ControlClientError`` or ``SendError`` with the one line to print.
    public func send(_ messages: [String]) throws {
        let client = try ControlClient(path: path)
        let now = Timestamp.now().rfc3339
        try send(messages.map { submission($0, truncated: false, at: now) }, with: client, acceptedBefore: 0)
    }

    /// Sends each line of `descriptor` as a record, in chunks; a chunk goes as soon as no more input is ready,
    /// so `tail -f | logctl send` ships promptly.
    public func sendLines(fromDescriptor descriptor: Int32) throws {
        let client = try ControlClient(path: path)
        let reader = LineReader(descriptor: descriptor, maximumLineBytes: Self.maximumLineBytes)
        var chunk: [Submission] = []
        var chunkBytes = 0
        var accepted = 0
        while let line = try reader.next() {
            let text = String(decoding: line.bytes[...].trimmingLineEnding(), as: UTF8.self)
            chunk.append(submission(text, truncated: line.truncated, at: Timestamp.now().rfc3339))
            chunkBytes += line.bytes.count
            if chunk.count >= Self.chunkRecords || chunkBytes >= Self.chunkBytes || !reader.hasInputReady {
                accepted += try send(chunk, with: client, acceptedBefore: accepted)
                chunk.removeAll(keepingCapacity: true)
                chunkBytes = 0
            }
        }
        if !chunk.isEmpty {
            try send(chunk, with: client, acceptedBefore: accepted)
        }
    }

    private func submission(_ message: String, truncated: Bool, at timestamp: String) -> Submission {
        Submission(message: message, priority: priority, fields: fields, timestamp: timestamp,
                   truncated: truncated ? true : nil)
    }

    @discardableResult
    private func send(_ submissions: [Submission], with client: ControlClient, acceptedBefore: Int) throws -> Int {
        let response = try client.send(ControlRequest(command: .send, records: submissions))
        guard response.ok else {
            let reason = response.error ?? "records not accepted"
            let accepted = acceptedBefore + (response.accepted ?? 0)
            throw SendError(description: accepted > 0 ? "\(reason) (\(accepted) earlier record(s) were accepted)" : reason)
        }
        return response.accepted ?? submissions.count
    }
}

/// The daemon did not accept what `logctl send` sent.
public struct SendError: Error, CustomStringConvertible {
    public let description: String
}
