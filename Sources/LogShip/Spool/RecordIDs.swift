import LogShipRecord

/// The ids of one request's records: `<instance>-<class>-<sequence>`, such as
/// `3f9c0e5a7b12d4e6a0c1b2d3e4f56789-error-4711`.
///
/// A record's id is given when it enters the spool (its ``SpoolInstance``, its class and its sequence there) and
/// is the same on every attempt: after a restart or a `kill -9`, in either half of a refused batch, after a
/// requeue from the dead letters. A receiver may drop a record whose id it has stored already.
public struct RecordIDs: Hashable, Sendable {
    public var instance: SpoolInstance
    public var priority: PriorityClass
    /// Each record's sequence in its class, in the request's order.
    public var sequences: [Int64]

    public init(instance: SpoolInstance, priority: PriorityClass, sequences: [Int64]) {
        self.instance = instance
        self.priority = priority
        self.sequences = sequences
    }

    /// What every id of the request starts with: `<instance>-<class>-`.
    public var prefix: [UInt8] { Array("\(instance)-\(priority)-".utf8) }

    /// The id of the `index`th record.
    public subscript(index: Int) -> String { "\(instance)-\(priority)-\(sequences[index])" }

    /// The request's `Idempotency-Key` (the IETF httpapi draft): the same whenever the same records are sent
    /// again, and different for any other set of them. `<instance>-<class>-<first>-<last>-<count>-<digest>`, the
    /// digest a 64-bit FNV-1a over every sequence, so that two requests with the same ends but different records
    /// between (a split, a partial acknowledgement) differ.
    public var idempotencyKey: String {
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for sequence in sequences {
            var value = UInt64(bitPattern: sequence)
            for _ in 0..<8 {
                digest = (digest ^ (value & 0xff)) &* 0x0000_0100_0000_01b3
                value >>= 8
            }
        }
        let ends = sequences.first.map { "\($0)-\(sequences.last!)" } ?? "none"
        return "\(instance)-\(priority)-\(ends)-\(sequences.count)-\(String(digest, radix: 16))"
    }
}
