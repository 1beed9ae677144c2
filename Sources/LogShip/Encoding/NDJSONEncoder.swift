import NIOCore

/// One JSON object per line (`application/x-ndjson`): the spool's own form, with the record's id as its first
/// key (`{"id":"…","timestamp":…}`).
struct NDJSONEncoder: RecordEncoder {
    var contentType: String { "application/x-ndjson" }
    var defaultPath: String { "/ingest" }

    /// Writes the lines straight into the request's buffer: the body of a batch of hundreds of records is made
    /// once, not made and then copied.
    func encodeBuffer(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) -> ByteBuffer {
        let ids = RecordIDText(ids)
        let reserve = ids.maximumLength + RecordIDText.keyLength + 1
        var body = ByteBufferAllocator().buffer(capacity: lines.reduce(0) { $0 + $1.count + reserve })
        for (index, line) in lines.enumerated() {
            line.withUnsafeBufferPointer { line in
                body.write(reserving: line.count + reserve) { writer in
                    writer.write(line, withID: ids, index)
                    writer.write(UInt8(ascii: "\n"))
                }
            }
        }
        return body
    }
}
