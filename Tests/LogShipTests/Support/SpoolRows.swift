import GRDB

/// Rows of a spool file's chunk table and of its settled runs, read from the file as another process would.
func spoolRows(_ path: String) throws -> (chunks: Int, settledRuns: Int) {
    let file = try DatabaseQueue(path: path)
    defer { try? file.close() }
    return try file.read { db in
        (try Int.fetchOne(db, sql: "SELECT count(*) FROM chunk") ?? -1,
         try Int.fetchOne(db, sql: "SELECT count(*) FROM chunk_settled") ?? -1)
    }
}
