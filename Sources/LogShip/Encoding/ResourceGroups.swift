import LogShipRecord

/// The records of a batch grouped by OTLP resource, in the order each resource first appears; within a group, the
/// records in batch order.
struct ResourceGroups {
    /// What a record's resource is made of, as the host vouches for it.
    struct Resource: Hashable {
        var host: EscapedString
        /// A journal record's unit, else the process name the kernel reported. A sender's syslog tag or
        /// `systemd_unit` field is its own word, kept as an attribute.
        var service: EscapedString
    }

    struct Group {
        var resource: Resource
        /// Indices of the records in the batch.
        var members: [Int]
    }

    private(set) var groups: [Group] = []

    private static let unknownService = EscapedString(plain: "unknown")

    init(_ records: [RecordLine]) {
        var groupOfResource: [Resource: Int] = [:]
        for (index, record) in records.enumerated() {
            let resource = Resource(
                host: record.host, service: record.vouchedUnit ?? record.peer?.comm ?? Self.unknownService)
            // A batch is mostly one resource after another of the same: the last group is looked at first.
            if let last = groups.indices.last, groups[last].resource == resource {
                groups[last].members.append(index)
            } else if let group = groupOfResource[resource] {
                groups[group].members.append(index)
            } else {
                groupOfResource[resource] = groups.count
                groups.append(Group(resource: resource, members: [index]))
            }
        }
    }
}
