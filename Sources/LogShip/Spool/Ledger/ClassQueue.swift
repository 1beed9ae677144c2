import DequeModule

/// The chunks of one priority class in sequence order, with the counts that are asked for often.
struct ClassQueue: Sendable {
    /// Ordered by first sequence; no two overlap.
    var chunks: Deque<SpoolChunk> = []
    /// The sequence the next record of the class gets.
    var nextSequence: Int64 = 1
    /// Records neither claimed nor settled, ready or waiting for a retry time.
    var pending = 0
    var claimed = 0
    /// Accounted bytes of the records not settled, in all and by sender (``SpoolChunk/sender``).
    private(set) var bytes = 0
    private(set) var bytesBySender: [UInt32?: Int] = [:]

    /// Counts `delta` more bytes (or fewer) of records not settled from `sender`.
    mutating func changeBytes(by delta: Int, of sender: UInt32?) {
        bytes += delta
        let held = bytesBySender[sender, default: 0] + delta
        bytesBySender[sender] = held == 0 ? nil : held
    }

    /// The index of the chunk holding `sequence`, if one does.
    func chunkIndex(containing sequence: Int64) -> Int? {
        let index = insertionIndex(for: sequence)
        guard index > chunks.startIndex, chunks[index - 1].contains(sequence) else { return nil }
        return index - 1
    }

    /// Where a chunk starting at `sequence` goes: the index of the first chunk starting after it.
    func insertionIndex(for sequence: Int64) -> Int {
        partitionIndex { $0.firstSequence <= sequence }
    }

    /// The index of the chunk with `id`, if the queue holds it.
    func index(ofChunk id: Int64) -> Int? {
        // Chunk ids grow with the sequences of their class but for requeued dead letters: a binary search finds
        // nearly all, a scan the rest.
        let index = partitionIndex { $0.id < id }
        if index < chunks.endIndex, chunks[index].id == id { return index }
        return chunks.firstIndex { $0.id == id }
    }

    /// The index of the first chunk for which `isBefore` is false, by binary search: `isBefore` must hold for a
    /// prefix of the chunks and for none after it.
    private func partitionIndex(_ isBefore: (SpoolChunk) -> Bool) -> Int {
        var low = chunks.startIndex
        var high = chunks.endIndex
        while low < high {
            let middle = (low + high) / 2
            if isBefore(chunks[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Removes the chunk with `id`; returns it.
    mutating func remove(chunkID id: Int64) -> SpoolChunk? {
        guard let index = index(ofChunk: id) else { return nil }
        return chunks.remove(at: index)
    }
}
