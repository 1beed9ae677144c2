import FoundationEssentials

/// One request as `logctl receive --json` prints it: a JSON object on one line, with its records (each with its
/// id, and `duplicate` when it was received before) and how many repeats it held, for a script to read.
struct ReceivedRequestJSON: Encodable {
    struct Record: Encodable {
        struct Peer: Encodable {
            var pid: Int32
            var uid: UInt32
            var comm: String?
        }

        var id: String?
        var duplicate: Bool
        var timestamp: String
        var priority: String
        var host: String
        var source: String
        var peer: Peer?
        var message: String
        var fields: [String: String]
        var truncated: Bool
    }

    var request: Int
    var batch: Int?
    var status: Int
    var format: String
    /// The records printed: all but the repeats, or all with the repeats marked when duplicates are kept; `nil`
    /// under `--quiet`.
    var records: [Record]?
    /// The records that were not repeats.
    var fresh: Int
    /// Records whose id was received before, in this request and since the receiver started.
    var duplicates: Int
    var duplicatesSinceStart: Int
    var malformedLines: Int

    enum CodingKeys: String, CodingKey {
        case request, batch, status, format, records, fresh, duplicates
        case duplicatesSinceStart = "duplicates_since_start"
        case malformedLines = "malformed_lines"
    }

    init(
        _ request: LogReceiver.Request, repeats: Set<Int>, duplicatesSinceStart: Int, quiet: Bool,
        keepsDuplicates: Bool
    ) {
        self.request = request.sequence
        batch = request.batch
        status = request.status
        format = request.format
        fresh = request.records.count - repeats.count
        duplicates = repeats.count
        self.duplicatesSinceStart = duplicatesSinceStart
        malformedLines = request.malformedLines
        guard !quiet else { return }
        records = request.records.enumerated().compactMap { index, record in
            let isRepeat = repeats.contains(index)
            guard keepsDuplicates || !isRepeat else { return nil }
            return Record(
                id: index < request.recordIDs.count ? request.recordIDs[index] : nil, duplicate: isRepeat,
                timestamp: record.timestamp.rfc3339, priority: record.priority.description, host: record.host,
                source: record.source.rawValue,
                peer: record.peer.map { Record.Peer(pid: $0.pid, uid: $0.uid, comm: $0.comm) },
                message: record.message,
                // RecordFields holds no key twice.
                fields: Dictionary(uniqueKeysWithValues: record.fields.map { ($0.key, $0.value) }),
                truncated: record.truncated)
        }
    }

    /// The object on one line, ended by a newline.
    var line: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every member is a string, a number, a Boolean or a dictionary of strings: encoding cannot fail.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
