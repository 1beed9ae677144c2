import Foundation

extension SpoolLedger {
    /// Whether no record is pending or claimed (dead letters aside).
    var holdsNoRecords: Bool { queues.allSatisfy { $0.pending == 0 && $0.claimed == 0 } }

    func statistics() -> SpoolStatistics {
        var statistics = SpoolStatistics()
        for priority in PriorityClass.allCases {
            statistics.pending[priority] = queues[priority.rawValue].pending
        }
        statistics.claimed = queues.reduce(0) { $0 + $1.claimed }
        statistics.bytes = bytes
        statistics.deadLetters = deadLetters
        statistics.deadLetterBytes = deadLetterBytes
        statistics.evicted = evicted
        statistics.refused = refused
        statistics.evictedForDisk = evictedForDisk
        statistics.refusedForDisk = refusedForDisk
        statistics.lastDiskShortage = lastDiskShortage
        statistics.quarantinedChunks = quarantinedChunks
        statistics.quarantinedRecords = quarantinedRecords
        statistics.unreadableRecords = unreadableRecords
        statistics.setAside = setAside
        return statistics
    }

    /// The newest sequence of every class: what `logctl flush` waits to see delivered.
    func arrivalMark() -> ArrivalMark {
        ArrivalMark(sequences: Dictionary(uniqueKeysWithValues: PriorityClass.allCases.map {
            ($0, queues[$0.rawValue].nextSequence - 1)
        }))
    }

    /// Records of `classes` not settled whose sequence is at or before `mark`'s for their class.
    func heldRecords(upTo mark: ArrivalMark, in classes: Set<PriorityClass>) -> Int {
        classes.reduce(0) { held, priority in
            let last = mark.sequences[priority] ?? 0
            return queues[priority.rawValue].chunks.reduce(held) { held, chunk in
                guard chunk.firstSequence <= last else { return held }
                let covered = min(chunk.count, Int(last - chunk.firstSequence) + 1)
                guard let marks = chunk.marks else { return held + covered }
                return held + (0..<covered).count { marks[$0] != .settled }
            }
        }
    }

    /// Where the oldest record of each class not settled is: its chunk, its index, and its line if in memory.
    func oldestRecords() -> [PriorityClass: (chunkID: Int64, index: Int, line: ArraySlice<UInt8>?)] {
        var oldest: [PriorityClass: (chunkID: Int64, index: Int, line: ArraySlice<UInt8>?)] = [:]
        for priority in PriorityClass.allCases {
            for chunk in queues[priority.rawValue].chunks where chunk.settledCount < chunk.count {
                let index = (0..<chunk.count).first { chunk.mark($0) != .settled }!
                oldest[priority] = (chunk.id, index, chunk.lines?.line(index))
                break
            }
        }
        return oldest
    }
}
