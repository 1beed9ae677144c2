import GRDB

/// A spool file that SQLite cannot use as the spool: not a database, malformed, or without the spool's tables.
///
/// Only damage is set aside (``SpoolSetAside``). What is not the file's fault (another process holding it,
/// permissions, a full disk, an I/O error, a newer schema) stops the start as it always did: a fresh spool would
/// hide the records of a file that is fine.
struct SpoolFileDamage: Error, CustomStringConvertible {
    let reason: String

    var description: String { reason }

    /// The damage `error` shows, if it shows damage.
    ///
    /// - Parameter readingSchema: Whether the error came from reading or converting the spool's tables, where
    ///   SQL that fails (`no such table`, `no such column`) means a schema this build cannot use.
    static func shown(by error: any Error, readingSchema: Bool) -> SpoolFileDamage? {
        if let damage = error as? SpoolFileDamage { return damage }
        guard let error = error as? DatabaseError else { return nil }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT, .SQLITE_FORMAT:
            return SpoolFileDamage(reason: error.message ?? "\(error.resultCode)")
        case .SQLITE_ERROR where readingSchema, .SQLITE_MISMATCH where readingSchema:
            return SpoolFileDamage(reason: "its schema is unusable: \(error.message ?? "\(error.resultCode)")")
        default:
            return nil
        }
    }
}
