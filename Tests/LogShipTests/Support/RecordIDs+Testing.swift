@testable import LogShip

extension RecordIDs {
    /// The instance of ``numbered(_:priority:)``'s ids.
    static let testInstance = SpoolInstance(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)

    /// Ids of `count` records of one instance, numbered from 1: for tests about everything but the ids.
    static func numbered(_ count: Int, priority: PriorityClass = .info) -> RecordIDs {
        RecordIDs(instance: testInstance, priority: priority, sequences: (0..<Int64(count)).map { $0 + 1 })
    }
}

extension RecordEncoder {
    /// The body for `lines` with ``RecordIDs/numbered(_:priority:)``'s ids.
    func encode(_ lines: [ArraySlice<UInt8>]) throws -> [UInt8] {
        try encode(lines, ids: .numbered(lines.count))
    }
}

extension Payload {
    /// A request of `lines` with ``RecordIDs/numbered(_:priority:)``'s ids.
    init(lines: [ArraySlice<UInt8>], batchNumber: Int, lane: Int = 0) {
        self.init(lines: lines, ids: .numbered(lines.count), batchNumber: batchNumber, lane: lane)
    }
}
