import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The journal input: reads entries through ``JournalReader`` on a thread of its own and commits the records to
/// the spool together with the cursor of the last entry read.
///
/// Because records and cursor share one transaction, a restart (even after `kill -9`) resumes right after what
/// the spool holds: no entry is lost and none is read twice. Journal records never evict anything: when a batch
/// does not fit, the spool stores none of it, and the reader waits for the spool to drain, goes back to the saved
/// cursor and reads again in smaller batches (the journal keeps the entries meanwhile).
public final class JournalIngestServer: Service, Sendable {
    /// The input's name in the spool's saved positions.
    public static let input = "journal"
    /// The most entries read, and committed, per batch.
    static let batchLimit = 512
    /// How long one read waits for new entries; it bounds how long a shutdown waits for the reader.
    static let followInterval: Duration = .milliseconds(250)

    private let reader: JournalReader
    /// The journal's thread: one thread, for the `sd_journal`'s whole life.
    private let thread: NIOThreadPool
    /// How entries become records; a reload may change which are selected.
    private let mapper: Mutex<JournalRecordMapper>
    private let intake: RecordIntake
    private let spool: any Spool
    private let spoolBudget: Int
    private let logger: Logger
    private let status = Mutex(JournalStatus(state: "starting"))

    /// Opens the journal, so that a journal that cannot be read stops start-up with a clear error.
    ///
    /// - Parameters:
    ///   - spoolBudget: `spool.max_bytes`: reading pauses above 95% of it, or when a batch did not fit.
    /// - Throws: ``JournalError``.
    public static func open(
        configuration: DaemonConfiguration.Journal, hostname: String, intake: RecordIntake, spool: any Spool,
        spoolBudget: Int, logger: Logger
    ) async throws -> JournalIngestServer {
        let mapper = JournalRecordMapper(
            selection: .init(
                units: Set(configuration.units), excludedUnits: Set(configuration.excludeUnits),
                leastImportant: configuration.minPriority),
            hostname: hostname, extraFields: configuration.fields, maximumFieldBytes: configuration.maxFieldBytes)
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        do {
            let reader = try await thread.runIfActive {
                try JournalReader(
                    directory: configuration.directory.isEmpty ? nil : configuration.directory,
                    matches: configuration.matches, start: configuration.startAt, mapper: mapper)
            }
            return JournalIngestServer(
                reader: reader, thread: thread, mapper: mapper, intake: intake, spool: spool, spoolBudget: spoolBudget,
                logger: logger)
        } catch {
            try? await thread.shutdownGracefully()
            throw error
        }
    }

    private init(
        reader: JournalReader, thread: NIOThreadPool, mapper: JournalRecordMapper, intake: RecordIntake,
        spool: any Spool, spoolBudget: Int, logger: Logger
    ) {
        self.reader = reader
        self.thread = thread
        self.mapper = Mutex(mapper)
        self.intake = intake
        self.spool = spool
        self.spoolBudget = spoolBudget
        self.logger = logger
    }

    public var statistics: JournalStatus { status.withLock { $0 } }

    /// Applies a reloaded configuration's selection (`units`, `exclude_units`, `min_priority`) to the entries
    /// read from now on.
    public func updateSelection(_ configuration: DaemonConfiguration.Journal) {
        mapper.withLock { mapper in
            mapper.selection = .init(
                units: Set(configuration.units), excludedUnits: Set(configuration.excludeUnits),
                leastImportant: configuration.minPriority)
        }
    }

    /// Reads and commits until graceful shutdown, then closes the journal on its thread.
    public func run() async throws {
        do {
            try await place(announcing: true)
            var limit = Self.batchLimit
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                try await waitForRoom(needed: spoolBudget / 20)
                try await readAndCommit(limit: &limit)
            }
            setState("stopped: shutting down")
        } catch {
            setState("stopped: \(error)")
            await close()
            throw error
        }
        await close()
    }

    /// Positions the reader after the cursor the spool holds, or at `journal.start_at` on a first start.
    ///
    /// - Parameter announcing: Log where reading starts (at start-up, not when going back after a failure).
    private func place(announcing: Bool) async throws {
        let saved = try await spool.savedPosition(of: Self.input)
        let reader = self.reader
        let placement = try await thread.runIfActive { try reader.position(savedCursor: saved) }
        switch placement {
        case .afterSavedCursor:
            if announcing { logger.info("journal: resuming after the saved cursor") }
        case .start(let start):
            if announcing { logger.info("journal: no saved cursor; reading from the \(start.rawValue)") }
        case .cursorLost(let realtime):
            let resumed = realtime.map { "after \(Timestamp(microsecondsSinceEpoch: Int64(clamping: $0)).rfc3339)" }
            logger.warning(
                """
                journal: the saved cursor's entry is gone (vacuumed, another machine's journal, or corrupt); \
                resuming \(resumed ?? "at journal.start_at")
                """,
                metadata: ["logship.journal.cursor": "\(saved ?? "")"])
        }
        setState("following")
    }

    /// Reads up to `limit` entries and commits their records with the cursor; halves `limit` when they did not
    /// fit in the spool, and lets it grow back as batches fit.
    private func readAndCommit(limit: inout Int) async throws {
        let reader = self.reader
        let batch: JournalReader.Batch
        let batchLimit = limit
        do {
            batch = try await thread.runIfActive {
                try reader.read(limit: batchLimit, waitingUpTo: Self.followInterval)
            }
        } catch let error as JournalError {
            logger.error("journal: read failed; trying again", metadata: ["logship.error": "\(error)"])
            try await recover()
            return
        }
        guard let cursor = batch.cursor else { return }
        let mapper = self.mapper.withLock { $0 }
        let records = batch.entries.compactMap(mapper.record(for:))
        let receipt: AppendReceipt
        do {
            receipt = try await intake.append(
                records, position: InputPosition(input: Self.input, cursor: cursor), evicting: false)
        } catch {
            // Neither the records nor the cursor were committed: read them again from the committed cursor.
            logger.error(
                "journal: records not stored; reading them again from the last saved cursor",
                metadata: ["logship.error": "\(error)"])
            try await recover()
            return
        }
        guard receipt.deferred == 0 else {
            // Nothing of it was stored, the cursor neither: wait for room, then read it again in smaller batches.
            limit = max(1, batch.entries.count / 2)
            try await waitForRoom(needed: records.reduce(0) { $0 + SpoolEntry($1).accountedBytes })
            try await place(announcing: false)
            return
        }
        limit = min(Self.batchLimit, limit * 2)
        let last = batch.entries.last?.realtime
        status.withLock { status in
            status.read += batch.entries.count
            status.filtered += batch.entries.count - records.count
            status.position = last.map { Timestamp(microsecondsSinceEpoch: Int64(clamping: $0)).rfc3339 }
            if let last, let newest = batch.newestRealtime {
                status.behindSeconds = Double(newest > last ? newest - last : 0) / 1_000_000
            }
        }
    }

    /// After a failed read or commit: waits a moment, then stands after the committed cursor again.
    private func recover() async throws {
        setState("following (recovering from an error)")
        try await Task.sleep(for: .seconds(1))
        try await place(announcing: false)
        setState("following")
    }

    /// Pauses reading while the spool lacks `needed` bytes of room (at least 5% of its budget), until it has that
    /// and another 5% of its budget, so that reading does not flap at the edge.
    private func waitForRoom(needed: Int) async throws {
        let ceiling = spoolBudget - max(needed, spoolBudget / 20)
        guard await spool.statistics().bytes > ceiling else { return }
        setState("paused: spool full")
        logger.warning("journal: the spool is nearly full; reading paused until it drains")
        while await spool.statistics().bytes > ceiling - spoolBudget / 20 {
            if Task.isShuttingDownGracefully { return }
            try await Task.sleep(for: .milliseconds(200))  // polling the spool's fill level while paused
        }
        logger.info("journal: the spool has room again; reading resumed")
        setState("following")
    }

    private func close() async {
        let reader = self.reader
        try? await thread.runIfActive { reader.close() }
        try? await thread.shutdownGracefully()
    }

    private func setState(_ state: String) {
        status.withLock { $0.state = state }
    }
}
