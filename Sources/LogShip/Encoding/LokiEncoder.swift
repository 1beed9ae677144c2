import LogShipRecord
import NIOCore

/// The Loki push API (`/loki/api/v1/push`, JSON): one stream per set of labels, its entries in time order, each
/// line the spooled record as it is (so Loki's `| json` finds every field).
///
/// The labels are only what the host vouches for: `host`, `priority` (the class) and, for a journal record, `unit`
/// (journald's `_SYSTEMD_UNIT`). A sender's fields are never labels and never the line's top-level keys: they stay
/// in the line's `fields` object (`fields_<key>` after LogQL's `| json`), which is their prefix. A socket sender's
/// `systemd_unit` or syslog tag is one of them. The record's id is the entry's structured metadata
/// (`log_record_uid`), which Loki 3 keeps beside the line without making it a label.
struct LokiEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/loki/api/v1/push" }

    func encodeBuffer(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> ByteBuffer {
        let records = try RecordLine.read(batch: lines)
        let ids = RecordIDText(ids)
        let streams = Self.streams(records, lines: lines)
        // A line's quotes escaped (about one byte in ten), its time and the labels.
        var body = ByteBuffer.body(
            expected: lines.reduce(64) { $0 + $1.count * 5 / 4 + 32 },
            largestReserve: 2 * (lines.map(\.count).max() ?? 0) + 160 + ids.maximumLength)
        body.writeStaticString(#"{"streams":["#)
        for (number, stream) in streams.enumerated() {
            if number > 0 { body.writeInteger(UInt8(ascii: ",")) }
            let first = records[stream.members[0]]
            lines[stream.members[0]].withUnsafeBufferPointer { line in
                body.write(reserving: 2 * line.count + 128) { writer in
                    writer.write(#"{"stream":{"host":"#)
                    writer.writeJSONString(first.host, of: line)
                    writer.write(#","priority":""#)
                    writer.write(first.priority.staticName)
                    writer.write(UInt8(ascii: "\""))
                    if let unit = first.vouchedUnit {
                        writer.write(#","unit":"#)
                        writer.writeJSONString(unit, of: line)
                    }
                    writer.write(#"},"values":["#)
                }
            }
            // Sorted by time; records of the same time keep their order in the batch.
            let entries = stream.members.sorted {
                (records[$0].timestamp, $0) < (records[$1].timestamp, $1)
            }
            for (position, index) in entries.enumerated() {
                lines[index].withUnsafeBufferPointer { line in
                    body.write(reserving: 2 * line.count + 64 + ids.maximumLength) { writer in
                        if position > 0 { writer.write(UInt8(ascii: ",")) }
                        writer.write(#"[""#)
                        writer.writeDecimal(records[index].timestamp.unixNanoseconds)
                        writer.write(#"","#)
                        writer.writeJSONString(quoting: line)
                        // Structured metadata (Loki 3): the id, named as Loki names OTLP's `log.record.uid`.
                        writer.write(#",{"log_record_uid":""#)
                        writer.write(ids, index)
                        writer.write(#""}]"#)
                    }
                }
            }
            body.writeStaticString("]}")
        }
        body.writeStaticString("]}")
        return body
    }

    /// The records grouped by their labels, in the order each set of labels first appears.
    private static func streams(_ records: [RecordLine], lines: [ArraySlice<UInt8>]) -> [BatchGroups.Group] {
        var streams = BatchGroups()
        var key: [UInt8] = []
        for (index, record) in records.enumerated() {
            key.removeAll(keepingCapacity: true)
            lines[index].withUnsafeBufferPointer { line in
                key.appendKeyPart(line[record.host.range])
                key.append(UInt8(truncatingIfNeeded: record.priority.rawValue))
                // Whether there is a unit, then the unit: no unit and an empty one are apart.
                if let unit = record.vouchedUnit {
                    key.append(1)
                    key.appendKeyPart(line[unit.range])
                }
            }
            streams.add(index, key: key)
        }
        return streams.groups
    }
}
