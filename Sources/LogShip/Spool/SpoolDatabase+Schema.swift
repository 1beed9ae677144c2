import GRDB

extension SpoolDatabase {
    /// The schema version this build writes (`PRAGMA user_version`).
    static let schemaVersion = 2

    /// Creates the tables on a new spool; refuses a spool written by a newer schema.
    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version <= schemaVersion else {
            throw SpoolError.storage("schema version \(version) is newer than this logshipd understands")
        }
        if version < 1 {
            try createRecordTables(db)
        }
        if version < 2 {
            // Version 2: positions of inputs that can be re-read, committed with their records.
            try db.execute(
                sql: """
                    CREATE TABLE input_position (
                        input TEXT PRIMARY KEY,    -- journal
                        cursor TEXT NOT NULL       -- where the input has read to
                    );
                    PRAGMA user_version = 2;
                    """)
        }
    }

    private static func createRecordTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE record (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- arrival order; AUTOINCREMENT so a requeued
                                                           -- dead letter can return to its old id
                    priority INTEGER NOT NULL,             -- PriorityClass.rawValue
                    line BLOB NOT NULL,                    -- the NDJSON line
                    size INTEGER NOT NULL,                 -- length(line)
                    not_before REAL                        -- retry time, seconds since 1970
                );
                CREATE INDEX record_by_class ON record(priority);
                CREATE TABLE dead_letter (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    record_id INTEGER NOT NULL,
                    priority INTEGER NOT NULL,
                    line BLOB NOT NULL,
                    status INTEGER,
                    reason TEXT NOT NULL,
                    failed_at TEXT NOT NULL
                );
                PRAGMA user_version = 1;
                """)
    }

    /// Counts and sizes per class, without reading any record.
    static func loadCounts(_ db: Database) throws -> State {
        var state = State()
        for row in try Row.fetchAll(db, sql: "SELECT priority, count(*), total(size) FROM record GROUP BY priority") {
            guard let priority = PriorityClass(rawValue: row[0]) else { continue }
            let count: Int = row[1]
            state.stored[priority.rawValue] = count
            state.bytes += Int(row[2] as Double) + count * SpoolEntry.overhead
        }
        state.deadLetters = try Int.fetchOne(db, sql: "SELECT count(*) FROM dead_letter") ?? 0
        return state
    }
}
