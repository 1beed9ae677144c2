/// One JSON array of the records per request (`application/json`).
struct JSONArrayEncoder: RecordEncoder {
    var contentType: String { "application/json" }
    var defaultPath: String { "/ingest" }

    func encode(_ lines: [ArraySlice<UInt8>]) -> [UInt8] {
        var body: [UInt8] = [UInt8(ascii: "[")]
        body.reserveCapacity(lines.reduce(2) { $0 + $1.count + 1 })
        for (index, line) in lines.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += line
        }
        body.append(UInt8(ascii: "]"))
        return body
    }
}
