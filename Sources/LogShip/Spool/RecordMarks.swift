import Foundation

/// What delivery has done with each record of one chunk: kept only once a record of it has been claimed or
/// settled, so a chunk that waits untouched costs nothing per record.
struct RecordMarks: Sendable {
    enum Mark: UInt8, Sendable {
        /// Waiting to be claimed (ready, or at its retry time).
        case pending
        /// Taken by an operation in flight.
        case claimed
        /// Needs nothing more: delivered, dead-lettered or evicted.
        case settled
    }

    private(set) var marks: [Mark]
    /// Retry times of released records, by index; a record without one is ready.
    private(set) var retryTimes: [Int: Date] = [:]
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

    /// The retry time of a pending record, if it was released with one.
    func retryTime(_ index: Int) -> Date? { retryTimes[index] }

    /// Makes room for records added at the end of the chunk, all pending.
    mutating func grow(to count: Int) {
        guard count > marks.count else { return }
        marks += Array(repeating: .pending, count: count - marks.count)
    }

    mutating func claim(_ index: Int) {
        precondition(marks[index] == .pending)
        marks[index] = .claimed
        retryTimes[index] = nil
        claimedCount += 1
        if index == firstPending { advanceFirstPending() }
    }

    /// A claimed record back to pending, ready at `retryAt` (now when `nil`).
    mutating func unclaim(_ index: Int, retryAt: Date?) {
        precondition(marks[index] == .claimed)
        marks[index] = .pending
        retryTimes[index] = retryAt
        claimedCount -= 1
        firstPending = min(firstPending, index)
    }

    /// A pending or claimed record needs nothing more.
    mutating func settle(_ index: Int) {
        switch marks[index] {
        case .settled: return
        case .claimed: claimedCount -= 1
        case .pending: retryTimes[index] = nil
        }
        marks[index] = .settled
        settledCount += 1
        if index == firstPending { advanceFirstPending() }
    }

    /// A settled record pending again (a dead letter requeued, an eviction that was not committed).
    mutating func unsettle(_ index: Int) {
        precondition(marks[index] == .settled)
        marks[index] = .pending
        settledCount -= 1
        firstPending = min(firstPending, index)
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

    private mutating func advanceFirstPending() {
        while firstPending < marks.count && marks[firstPending] != .pending { firstPending += 1 }
    }
}
