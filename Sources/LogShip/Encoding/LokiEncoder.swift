import Foundation

/// The Loki push API (`/loki/api/v1/push`, JSON): one stream per ``LokiStreamLabels`` (host, priority class, a
/// journal record's unit), its entries in time order, each line the record as JSON (so Loki's `| json` finds
/// every field).
struct LokiEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/loki/api/v1/push" }

    func encode(_ lines: [ArraySlice<UInt8>]) throws -> [UInt8] {
        let decoder = JSONDecoder()
        var streams: [[String: String]: [(time: Int64, line: String)]] = [:]
        var order: [[String: String]] = []
        for line in lines {
            let record = try decoder.decode(LogRecord.self, from: Data(line))
            let labels = LokiStreamLabels.labels(for: record)
            if streams[labels] == nil { order.append(labels) }
            streams[labels, default: []].append((record.timestamp.microsecondsSinceEpoch, String(decoding: line, as: UTF8.self)))
        }
        let push = Push(streams: order.map { labels in
            let entries = streams[labels]!.enumerated()
                .sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }
                .map { [String(Timestamp(microsecondsSinceEpoch: $0.element.time).unixNanoseconds), $0.element.line] }
            return Stream(stream: labels, values: entries)
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(push))
    }

    private struct Push: Encodable {
        var streams: [Stream]
    }

    private struct Stream: Encodable {
        var stream: [String: String]
        var values: [[String]]
    }
}
