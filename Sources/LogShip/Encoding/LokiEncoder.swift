import LogShipRecord
import NIOCore

/// The Loki push API (`/loki/api/v1/push`, JSON): one stream per set of labels, its entries in time order, each
/// line the spooled record as it is (so Loki's `| json` finds every field).
///
/// The labels are only what the host vouches for: `host`, `priority` (the class) and, for a journal record, `unit`
/// (journald's `_SYSTEMD_UNIT`). A sender's fields are never labels and never the line's top-level keys: they stay
/// in the line's `fields` object (`fields_<key>` after LogQL's `| json`), which is their prefix. A socket sender's
/// `systemd_unit` or syslog tag is one of them.
struct LokiEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/loki/api/v1/push" }

    private struct Labels: Hashable {
        var host: EscapedString
        var priority: PriorityClass
        var unit: EscapedString?
    }

    func encode(_ lines: [ArraySlice<UInt8>]) throws -> [UInt8] {
        Array(try encodeBuffer(lines).readableBytesView)
    }

    func encodeBuffer(_ lines: [ArraySlice<UInt8>]) throws -> ByteBuffer {
        let records = try RecordLine.read(batch: lines)
        var streams: [(labels: Labels, members: [Int])] = []
        var streamOfLabels: [Labels: Int] = [:]
        for (index, record) in records.enumerated() {
            let labels = Labels(host: record.host, priority: record.priority, unit: record.vouchedUnit)
            if let stream = streamOfLabels[labels] {
                streams[stream].members.append(index)
            } else {
                streamOfLabels[labels] = streams.count
                streams.append((labels, [index]))
            }
        }
        // A line's quotes escaped (about one byte in ten), its time and the labels.
        var body = ByteBufferAllocator().buffer(capacity: lines.reduce(64) { $0 + $1.count * 5 / 4 + 32 })
        body.writeStaticString(#"{"streams":["#)
        for (number, stream) in streams.enumerated() {
            if number > 0 { body.writeInteger(UInt8(ascii: ",")) }
            body.writeStaticString(#"{"stream":{"host":"#)
            body.writeJSONString(stream.labels.host)
            body.writeStaticString(#","priority":""#)
            body.writeStaticString(stream.labels.priority.staticName)
            body.writeInteger(UInt8(ascii: "\""))
            if let unit = stream.labels.unit {
                body.writeStaticString(#","unit":"#)
                body.writeJSONString(unit)
            }
            body.writeStaticString(#"},"values":["#)
            // Sorted by time; records of the same time keep their order in the batch.
            let entries = stream.members.sorted {
                (records[$0].timestamp, $0) < (records[$1].timestamp, $1)
            }
            for (position, index) in entries.enumerated() {
                if position > 0 { body.writeInteger(UInt8(ascii: ",")) }
                body.writeStaticString(#"[""#)
                body.writeDecimal(records[index].timestamp.unixNanoseconds)
                body.writeStaticString(#"","#)
                body.writeJSONString(quoting: lines[index])
                body.writeInteger(UInt8(ascii: "]"))
            }
            body.writeStaticString("]}")
        }
        body.writeStaticString("]}")
        return body
    }
}
