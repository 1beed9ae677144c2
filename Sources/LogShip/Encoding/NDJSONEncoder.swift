/// One JSON object per line (`application/x-ndjson`): the spool's own form, as it is.
struct NDJSONEncoder: RecordEncoder {
    var contentType: String { "application/x-ndjson" }
    var defaultPath: String { "/ingest" }

    func encode(_ lines: [ArraySlice<UInt8>]) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(lines.reduce(0) { $0 + $1.count + 1 })
        for line in lines {
            body += line
            body.append(UInt8(ascii: "\n"))
        }
        return body
    }
}
