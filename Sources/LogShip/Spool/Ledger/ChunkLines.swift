#if canImport(Glibc)
import Glibc
#endif

/// The lines of one spool chunk held in memory: the blob as stored (each NDJSON line followed by a newline) and
/// where each line starts in it.
///
/// NDJSON lines never hold a raw newline (the encoder escapes it), so the newlines are exactly the record
/// boundaries, and a run of records is a contiguous slice of the blob: an NDJSON body as it goes on the wire.
struct ChunkLines: Sendable {
    /// The stored blob: every line followed by `\n`.
    private(set) var bytes: [UInt8]
    /// Where each line starts in `bytes`; a line ends one byte before the next start (its newline).
    private(set) var starts: [Int32]

    /// Lines as they are stored: the chunk table's blob.
    ///
    /// A blob that does not end with a newline (never written so) keeps its last bytes as a last line.
    init(blob: [UInt8]) {
        var starts: [Int32] = []
        let end = blob.withUnsafeBytes { raw -> Int in
            // memchr: a chunk read back holds hundreds of lines, found many bytes at a time.
            guard let base = raw.baseAddress else { return 0 }
            var start = 0
            while start < raw.count, let newline = memchr(base + start, Int32(UInt8(ascii: "\n")), raw.count - start) {
                starts.append(Int32(start))
                start = UnsafeRawPointer(newline) - base + 1
            }
            return start
        }
        bytes = blob
        if end < bytes.count {
            starts.append(Int32(end))
            bytes.append(UInt8(ascii: "\n"))
        }
        self.starts = starts
    }

    /// The lines of `entries`, in order.
    init(_ entries: some Collection<SpoolEntry>) {
        bytes = []
        starts = []
        append(entries)
    }

    /// How many lines there are.
    var count: Int { starts.count }

    /// The line at `index`, without its newline.
    func line(_ index: Int) -> ArraySlice<UInt8> {
        bytes[Int(starts[index])..<(end(of: index) - 1)]
    }

    /// The length of the line at `index`, without its newline.
    func lineLength(_ index: Int) -> Int {
        end(of: index) - 1 - Int(starts[index])
    }

    /// Adds the lines of `entries` at the end.
    mutating func append(_ entries: some Collection<SpoolEntry>) {
        bytes.reserveCapacity(bytes.count + entries.reduce(0) { $0 + $1.line.count + 1 })
        starts.reserveCapacity(starts.count + entries.count)
        for entry in entries {
            starts.append(Int32(bytes.count))
            bytes.append(contentsOf: entry.line)
            bytes.append(UInt8(ascii: "\n"))
        }
    }

    private func end(of index: Int) -> Int {
        index + 1 < starts.count ? Int(starts[index + 1]) : bytes.count
    }
}
