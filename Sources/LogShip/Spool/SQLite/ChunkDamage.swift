/// Why a chunk's row cannot be read as what it says it is, with what of its lines could be read all the same.
///
/// Thrown by ``SQLiteSpool/lines(ofChunk:_:)``; the spool answers it by quarantining the chunk
/// (``SpoolLedger/Quarantine``), never by stalling the chunk's class.
struct ChunkDamage: Error, CustomStringConvertible {
    private enum Code: Sendable {
        /// The blob does not decompress, or not to the size recorded.
        case undecodable
        /// Stored in a form this build does not know.
        case unknownForm
        /// The row's numbers cannot be true (a negative size, a count that cannot fit).
        case implausibleRow
        /// The lines read are not as many as the row or the ledger says.
        case linesDoNotMatch
        /// The ledger holds the chunk, the table does not.
        case missing
    }

    private let code: Code
    /// What is wrong, in a few words: the dead letters' reason and the log say it.
    let detail: String
    /// The lines that could be read despite the damage, if any.
    var readable: ChunkLines?

    private init(_ code: Code, _ detail: String, readable: ChunkLines? = nil) {
        self.code = code
        self.detail = detail
        self.readable = readable
    }

    static func undecodable(_ detail: String) -> ChunkDamage { ChunkDamage(.undecodable, detail) }

    static func unknownForm(_ compression: String) -> ChunkDamage {
        ChunkDamage(.unknownForm, "it is stored in an unknown form (compression \(compression))")
    }

    static func implausibleRow(_ detail: String) -> ChunkDamage { ChunkDamage(.implausibleRow, detail) }

    /// - Parameter lines: The lines read, every one of them readable.
    static func linesDoNotMatch(_ detail: String, lines: ChunkLines) -> ChunkDamage {
        ChunkDamage(.linesDoNotMatch, detail, readable: lines)
    }

    static let missing = ChunkDamage(.missing, "its row is gone from the chunk table")

    var description: String { detail }
}
