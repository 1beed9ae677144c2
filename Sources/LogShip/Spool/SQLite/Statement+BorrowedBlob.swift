import GRDB
import GRDBSQLite

extension Statement {
    /// Runs the statement with `arguments`, its parameter at `index` (1-based) bound to `blob` without a copy.
    ///
    /// GRDB binds blobs as `Data`, and a chunk's lines are an array: converting them made a copy of up to 224 KiB,
    /// in an allocation of its own, for every chunk written, on the writer that every commit waits for. Here the
    /// array's bytes are bound for this execution only (`SQLITE_STATIC`), and the parameter is bound to NULL again
    /// before they can go away. The arguments GRDB keeps with the statement hold the placeholder at `index`.
    ///
    /// - Parameter arguments: Every argument, with a placeholder at `index`.
    /// - Throws: `DatabaseError` when SQLite refuses the blob or the statement fails.
    func execute(_ arguments: StatementArguments, blob: [UInt8], at index: Int32) throws {
        try setArguments(arguments)
        try blob.withUnsafeBytes { bytes in
            // A null pointer would bind NULL, not an empty blob.
            let code = bytes.isEmpty
                ? sqlite3_bind_zeroblob(sqliteStatement, index, 0)
                : sqlite3_bind_blob64(sqliteStatement, index, bytes.baseAddress, sqlite3_uint64(bytes.count), nil)
            defer { sqlite3_bind_null(sqliteStatement, index) }
            guard code == SQLITE_OK else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(sqlite3_db_handle(sqliteStatement))), sql: sql)
            }
            try execute()
        }
    }
}
