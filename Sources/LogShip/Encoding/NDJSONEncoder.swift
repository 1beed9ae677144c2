import NIOCore

/// One JSON object per line (`application/x-ndjson`): the spool's own form, as it is.
struct NDJSONEncoder: RecordEncoder {
    var contentType: String { "application/x-ndjson" }
    var defaultPath: String { "/ingest" }

    func encode(_ lines: [ArraySlice<UInt8>]) -> [UInt8] {
        Array(encodeBuffer(lines).readableBytesView)
    }

    /// Writes the lines straight into the request's buffer: the body of a batch of hundreds of records is made
    /// once, not made and then copied.
    func encodeBuffer(_ lines: [ArraySlice<UInt8>]) -> ByteBuffer {
        var body = ByteBufferAllocator().buffer(capacity: lines.reduce(0) { $0 + $1.count + 1 })
        for line in lines {
            body.writeBytes(line)
            body.writeInteger(UInt8(ascii: "\n"))
        }
        return body
    }
}
