extension LogRecord: Decodable {
    private enum CodingKeys: String, CodingKey {
        case timestamp, priority, severity, host, source, message, pid, uid, gid, comm, fields, truncated
    }

    /// Decodes the NDJSON form written by ``ndjsonLine``; used by `logctl receive` and the tests.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let timestampText = try container.decode(String.self, forKey: .timestamp)
        guard let timestamp = Timestamp(rfc3339: timestampText) else {
            throw DecodingError.dataCorruptedError(
                forKey: .timestamp, in: container, debugDescription: "not an RFC 3339 timestamp: \(timestampText)")
        }
        let priorityName = try container.decode(String.self, forKey: .priority)
        guard let priority = PriorityClass(name: priorityName) else {
            throw DecodingError.dataCorruptedError(
                forKey: .priority, in: container, debugDescription: "unknown priority class: \(priorityName)")
        }
        let severityValue = try container.decode(Int.self, forKey: .severity)
        guard let severity = Severity(rawValue: severityValue) else {
            throw DecodingError.dataCorruptedError(
                forKey: .severity, in: container, debugDescription: "severity out of range: \(severityValue)")
        }
        let sourceName = try container.decode(String.self, forKey: .source)
        guard let source = Source(rawValue: sourceName) else {
            throw DecodingError.dataCorruptedError(
                forKey: .source, in: container, debugDescription: "unknown source: \(sourceName)")
        }
        var peer: PeerCredentials?
        if let pid = try container.decodeIfPresent(Int32.self, forKey: .pid) {
            peer = PeerCredentials(
                pid: pid,
                uid: try container.decodeIfPresent(UInt32.self, forKey: .uid) ?? 0,
                gid: try container.decodeIfPresent(UInt32.self, forKey: .gid) ?? 0,
                comm: try container.decodeIfPresent(String.self, forKey: .comm))
        }
        self.init(
            timestamp: timestamp,
            priority: priority,
            severity: severity,
            host: try container.decode(String.self, forKey: .host),
            source: source,
            message: try container.decode(String.self, forKey: .message),
            peer: peer,
            fields: RecordFields(try container.decodeIfPresent([String: String].self, forKey: .fields) ?? [:]),
            truncated: try container.decodeIfPresent(Bool.self, forKey: .truncated) ?? false)
    }
}
