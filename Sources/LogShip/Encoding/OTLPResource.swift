import LogShipRecord

/// What the OTLP resource of a record is made of, as the host vouches for it: the host, and the service.
struct OTLPResource {
    var host: RecordLine.Text
    /// A journal record's unit, else the process name the kernel reported; `nil` for neither, written as
    /// `unknown`. A sender's syslog tag or `systemd_unit` field is its own word, kept as an attribute.
    var service: RecordLine.Text?

    init(_ record: RecordLine) {
        host = record.host
        service = record.vouchedUnit ?? record.peer?.comm
    }

    /// The records of a batch grouped by resource, in the order each resource first appears.
    static func groups(_ records: [RecordLine], lines: [ArraySlice<UInt8>]) -> [BatchGroups.Group] {
        var groups = BatchGroups()
        var key: [UInt8] = []
        for (index, record) in records.enumerated() {
            let resource = OTLPResource(record)
            key.removeAll(keepingCapacity: true)
            lines[index].withUnsafeBufferPointer { line in
                key.appendKeyPart(line[resource.host.range])
                if let service = resource.service {
                    key.appendKeyPart(line[service.range])
                } else {
                    key.append(contentsOf: "unknown".utf8)
                    key.append(0)
                }
            }
            groups.add(index, key: key)
        }
        return groups.groups
    }
}
