/// Turns a `logctl send` submission into a record: resolves its priority, applies the size limit, stamps the
/// trusted sender identity.
package struct SubmissionReader: Sendable {
    package var hostname: String
    package var maximumRecordBytes: Int

    package init(hostname: String, maximumRecordBytes: Int) {
        self.hostname = hostname
        self.maximumRecordBytes = maximumRecordBytes
    }

    package enum Rejection: Error, CustomStringConvertible {
        case unknownPriority(String)
        case badTimestamp(String)

        package var description: String {
            switch self {
            case .unknownPriority(let text):
                "unknown priority \"\(text)\" (use \(PriorityClass.spellings))"
            case .badTimestamp(let text): "timestamp \"\(text)\" is not RFC 3339"
            }
        }
    }

    package func record(
        from submission: Submission, peer: PeerCredentials, receivedAt: Timestamp
    ) -> Result<LogRecord, Rejection> {
        var priority = PriorityClass.info
        var severity = Severity.informational
        if let text = submission.priority {
            guard let resolved = PriorityClass.resolve(text) else { return .failure(.unknownPriority(text)) }
            (priority, severity) = resolved
        }
        var timestamp = receivedAt
        if let text = submission.timestamp {
            guard let parsed = Timestamp(rfc3339: text) else { return .failure(.badTimestamp(text)) }
            timestamp = parsed
        }
        var message = submission.message
        var truncated = submission.truncated ?? false
        if message.utf8.count > maximumRecordBytes {
            message = String(
                decoding: Array(message.utf8.prefix(maximumRecordBytes))[...].droppingIncompleteUTF8Suffix(),
                as: UTF8.self)
            truncated = true
        }
        return .success(
            LogRecord(
                timestamp: timestamp, priority: priority, severity: severity, host: hostname, source: .control,
                message: message, peer: peer,
                fields: RecordFields(fromSender: (submission.fields ?? [:]).lazy.map { ($0.key, $0.value) }),
                truncated: truncated))
    }
}
