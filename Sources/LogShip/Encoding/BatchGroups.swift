/// The records of a batch grouped by a key of bytes (an OTLP resource, a Loki stream's labels), in the order each
/// key first appears; within a group, the records in batch order.
struct BatchGroups {
    struct Group {
        var key: [UInt8]
        /// Indices of the records in the batch.
        var members: [Int]
    }

    private(set) var groups: [Group] = []
    private var groupOfKey: [[UInt8]: Int] = [:]

    /// Puts record `index` in the group of `key`.
    mutating func add(_ index: Int, key: [UInt8]) {
        // A batch is mostly one group after another of the same: the last group is looked at first.
        if let last = groups.indices.last, groups[last].key == key {
            groups[last].members.append(index)
        } else if let group = groupOfKey[key] {
            groups[group].members.append(index)
        } else {
            groupOfKey[key] = groups.count
            groups.append(Group(key: key, members: [index]))
        }
    }
}

extension Array<UInt8> {
    /// Appends `part` of a group's key and a zero byte, which no spooled string holds, to end it.
    mutating func appendKeyPart(_ part: Slice<UnsafeBufferPointer<UInt8>>) {
        append(contentsOf: part)
        append(0)
    }
}
