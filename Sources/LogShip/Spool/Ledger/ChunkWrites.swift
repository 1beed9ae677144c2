/// What one transaction must write to the chunk tables, as the ledger decided it.
struct ChunkWrites: Sendable {
    /// A chunk to insert, with its lines and their sender.
    struct Insertion: Sendable {
        var id: Int64
        var priority: PriorityClass
        var firstSequence: Int64
        var lines: ChunkLines
        var sender: UInt32? = nil
    }

    /// A chunk extended at its end: its whole new blob (SQLite rewrites a row whole).
    struct Extension: Sendable {
        var id: Int64
        var priority: PriorityClass
        /// Every line, the old ones and those added.
        var lines: ChunkLines
        /// How many records were added, and their accounted bytes.
        var added: Int
        var addedBytes: Int
        /// The sequence after its last record's.
        var endSequence: Int64
    }

    var insertions: [Insertion] = []
    var extensions: [Extension] = []
    /// Chunks whose every record is settled: deleted, with their settled runs.
    var deletions: [(id: Int64, priority: PriorityClass)] = []
    /// Chunks partly settled: their runs of settled records, replacing the runs stored for them.
    var settledRuns: [Int64: [Range<Int>]] = [:]

    var isEmpty: Bool { insertions.isEmpty && extensions.isEmpty && deletions.isEmpty && settledRuns.isEmpty }

    /// Per class, the sequence after the last one these writes store. The spool keeps the largest as the class's
    /// floor: a record's sequence is part of its id (``RecordIDs``), and a sequence given once must not be given
    /// again in the same spool instance, even after the records that had it are delivered and deleted.
    var sequenceEnds: [PriorityClass: Int64] {
        var ends: [PriorityClass: Int64] = [:]
        for insertion in insertions {
            let end = insertion.firstSequence + Int64(insertion.lines.count)
            ends[insertion.priority] = max(ends[insertion.priority] ?? end, end)
        }
        for extended in extensions {
            ends[extended.priority] = max(ends[extended.priority] ?? extended.endSequence, extended.endSequence)
        }
        return ends
    }

    /// What settling records of `chunk` means for its row: deleted once every record is settled, otherwise its
    /// settled runs rewritten.
    mutating func recordSettlement(of chunk: SpoolChunk, _ priority: PriorityClass) {
        if chunk.settledCount == chunk.count {
            deletions.append((chunk.id, priority))
            settledRuns[chunk.id] = nil
        } else {
            settledRuns[chunk.id] = chunk.marks?.settledRuns ?? []
        }
    }
}
