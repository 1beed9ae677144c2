/// What delivery has done with each record of one chunk: kept only once a record of it has been claimed or
/// settled, so a chunk that waits untouched costs nothing per record.
struct RecordMarks: Sendable {
    enum Mark: UInt8, Sendable {
        /// Waiting to be claimed.
        case pending
        /// Taken by an operation in flight.
        case claimed
        /// Needs nothing more: delivered, dead-lettered or evicted.
        case settled
    }

    private(set) var marks: [Mark]
    private(set) var claimedCount = 0
    private(set) var settledCount = 0
    /// No record before this index is pending, so claims start looking here.
    private(set) var firstPending = 0

    /// Marks for `count` records, all pending.
    init(count: Int) {
        marks = Array(repeating: .pending, count: count)
    }

    var count: Int { marks.count }
    var pendingCount: Int { marks.count - claimedCount - settledCount }

    subscript(index: Int) -> Mark { marks[index] }

    /// Makes room for records added at the end of the chunk, all pending.
    mutating func grow(to count: Int) {
        guard count > marks.count else { return }
        marks += Array(repeating: .pending, count: count - marks.count)
    }

    /// Changes the records `range`, every one of them marked `previous`, to `mark`.
    mutating func change(_ range: Range<Int>, from previous: Mark, to mark: Mark) {
        guard previous != mark, !range.isEmpty else { return }
        for index in range {
            precondition(marks[index] == previous, "record \(index) is \(marks[index]), not \(previous)")
            marks[index] = mark
        }
        switch previous {
        case .pending: break
        case .claimed: claimedCount -= range.count
        case .settled: settledCount -= range.count
        }
        switch mark {
        case .pending:
            firstPending = min(firstPending, range.lowerBound)
        case .claimed: claimedCount += range.count
        case .settled: settledCount += range.count
        }
        if previous == .pending && range.contains(firstPending) {
            firstPending = range.upperBound
            while firstPending < marks.count && marks[firstPending] != .pending { firstPending += 1 }
        }
    }

    /// The settled records as runs of consecutive indexes: what the chunk_settled table holds for the chunk.
    var settledRuns: [Range<Int>] {
        var runs: [Range<Int>] = []
        var start: Int?
        for index in 0...marks.count {
            let settled = index < marks.count && marks[index] == .settled
            if settled, start == nil { start = index }
            if !settled, let first = start {
                runs.append(first..<index)
                start = nil
            }
        }
        return runs
    }
}
