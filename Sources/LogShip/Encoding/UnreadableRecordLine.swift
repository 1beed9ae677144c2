import LogShipRecord

/// A batch holds a line that is not a record's NDJSON line, so a format that reads the records cannot encode it.
///
/// The uploader reports it as it reports any batch it cannot encode (``HTTPUploader/upload(_:)``).
struct UnreadableRecordLine: Error, CustomStringConvertible {
    /// The line's place in the batch, from 0.
    var index: Int
    var reason: RecordLineError

    var description: String { "record \(index + 1) of the batch is not a spooled record line: \(reason)" }
}

extension RecordLine {
    /// The lines of a batch, read.
    static func read(batch lines: [ArraySlice<UInt8>]) throws(UnreadableRecordLine) -> [RecordLine] {
        var records: [RecordLine] = []
        records.reserveCapacity(lines.count)
        for (index, line) in lines.enumerated() {
            do {
                records.append(try RecordLine(line))
            } catch {
                throw UnreadableRecordLine(index: index, reason: error)
            }
        }
        return records
    }
}
