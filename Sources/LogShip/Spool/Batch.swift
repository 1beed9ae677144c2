/// Records claimed together for one request, all of one class, oldest first.
public struct Batch: Hashable, Sendable {
    public var priority: PriorityClass
    public var records: [SpooledRecord]
    /// The claim's place in claim order since the spool opened (1, 2, …), given where claims are serialised so
    /// that two claims racing each other are still numbered in the order they took their records.
    public var number: Int
    /// The life of the spool the records entered: with their class and sequences, their ids (``ids``).
    public var instance: SpoolInstance

    public init(priority: PriorityClass, records: [SpooledRecord], number: Int = 0, instance: SpoolInstance) {
        self.priority = priority
        self.records = records
        self.number = number
        self.instance = instance
    }

    /// Its records' ids, which every request sending them carries.
    public var ids: RecordIDs { RecordIDs(instance: instance, priority: priority, sequences: sequences) }

    /// The first and second half, to find the records a remote refuses.
    public func halves() -> (Batch, Batch) {
        let middle = records.count / 2
        return (
            Batch(priority: priority, records: Array(records[..<middle]), number: number, instance: instance),
            Batch(priority: priority, records: Array(records[middle...]), number: number, instance: instance)
        )
    }

    /// At most `count` contiguous parts of nearly equal size, in order; as many as there are records if fewer.
    public func parts(_ count: Int) -> [Batch] {
        let count = max(1, min(count, records.count))
        return (0..<count).map { index in
            let range = (records.count * index / count)..<(records.count * (index + 1) / count)
            return Batch(priority: priority, records: Array(records[range]), number: number, instance: instance)
        }
    }

    var sequences: [Int64] { records.map(\.sequence) }

    /// The bytes its records take in the spool's canonical form: what claims are sized by.
    var spoolBytes: Int { records.reduce(0) { $0 + $1.line.count } }
}
