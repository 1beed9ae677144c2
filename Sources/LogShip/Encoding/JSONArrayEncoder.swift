import NIOCore

/// One JSON array of the records per request (`application/json`), each with its id as its first key.
struct JSONArrayEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/ingest" }

    func encodeBuffer(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) -> ByteBuffer {
        let ids = RecordIDText(ids)
        let reserve = ids.maximumLength + RecordIDText.keyLength + 1
        var body = ByteBufferAllocator().buffer(capacity: lines.reduce(2) { $0 + $1.count + reserve })
        body.writeInteger(UInt8(ascii: "["))
        for (index, line) in lines.enumerated() {
            line.withUnsafeBufferPointer { line in
                body.write(reserving: line.count + reserve) { writer in
                    if index > 0 { writer.write(UInt8(ascii: ",")) }
                    writer.write(line, withID: ids, index)
                }
            }
        }
        body.writeInteger(UInt8(ascii: "]"))
        return body
    }
}
