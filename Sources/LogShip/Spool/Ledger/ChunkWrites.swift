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
    }

    var insertions: [Insertion] = []
    var extensions: [Extension] = []
    /// Chunks whose every record is settled: deleted, with their settled runs.
    var deletions: [(id: Int64, priority: PriorityClass, endSequence: Int64)] = []
    /// Chunks partly settled: their runs of settled records, replacing the runs stored for them.
    var settledRuns: [Int64: [Range<Int>]] = [:]

    var isEmpty: Bool { insertions.isEmpty && extensions.isEmpty && deletions.isEmpty && settledRuns.isEmpty }

    /// Per class, the sequence after the last record of the chunks these writes delete. The spool keeps the
    /// largest as the class's floor: a record's sequence is part of its id (``RecordIDs``), and a sequence given
    /// once must not be given again in the same spool instance after the records that had it are deleted. While a
    /// chunk is stored, its row says how far its class's sequences went: only a deletion needs the floor.
    var deletedSequenceEnds: [PriorityClass: Int64] {
        var ends: [PriorityClass: Int64] = [:]
        for deletion in deletions {
            ends[deletion.priority] = max(ends[deletion.priority] ?? deletion.endSequence, deletion.endSequence)
        }
        return ends
    }

    /// What settling records of `chunk` means for its row: deleted once every record is settled, otherwise its
    /// settled runs rewritten.
    mutating func recordSettlement(of chunk: SpoolChunk, _ priority: PriorityClass) {
        if chunk.settledCount == chunk.count {
            deletions.append((chunk.id, priority, chunk.endSequence))
            settledRuns[chunk.id] = nil
        } else {
            settledRuns[chunk.id] = chunk.marks?.settledRuns ?? []
        }
    }
}
