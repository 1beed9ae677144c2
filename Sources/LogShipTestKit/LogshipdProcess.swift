import Foundation
import LogShip

/// The real `logshipd` binary with its sockets, configuration and spool in one directory.
public enum LogshipdProcess {
    /// Writes `logshipd.yaml` in `directory` for a daemon posting to `url`; `ingest`, `upload`, `spoolKeys` and
    /// `journal` add keys to their sections (the journal stays off without any, the datagram socket without a
    /// `datagram:` key in `ingest`), `sections` adds whole sections (`["tls": ["ca_file: …"]]`), `batchRecords` is
    /// `batch.max_records`.
    ///
    /// - Returns: The configuration's path.
    @discardableResult
    public static func configure(
        directory: String, url: String, ingest: [String] = [], upload: [String] = [], batchRecords: Int = 500,
        spool: String? = nil, spoolKeys: [String] = [], journal: [String] = [], sections: [String: [String]] = [:]
    ) throws -> String {
        let path = "\(directory)/logshipd.yaml"
        let datagramOff = ingest.contains { $0.hasPrefix("datagram:") } ? [] : ["datagram: \"\""]
        let ingestKeys = (
            ["stream: \(directory)/ingest.sock", "control: \(directory)/control.sock"] + datagramOff + ingest
        )
            .map { "  \($0)" }.joined(separator: "\n")
        let uploadKeys = (["url: \(url)", "retry_max: 1s"] + upload).map { "  \($0)" }.joined(separator: "\n")
        // No margin unless a test sets one: the temporary directories share the machine's disk.
        let margin = spoolKeys.contains { $0.hasPrefix("min_free_disk:") } ? [] : ["min_free_disk: 0"]
        let spoolSection = (["path: \(spool ?? "\(directory)/spool.db")"] + margin + spoolKeys)
            .map { "  \($0)" }.joined(separator: "\n")
        let journalSection = journal.isEmpty ? "" : "journal:\n" + journal.map { "  \($0)" }.joined(separator: "\n")
        let otherSections = sections.sorted { $0.key < $1.key }
            .map { name, keys in "\(name):\n" + keys.map { "  \($0)" }.joined(separator: "\n") }
            .joined(separator: "\n")
        try """
            ingest:
            \(ingestKeys)
            upload:
            \(uploadKeys)
            batch:
              max_records: \(batchRecords)
            spool:
            \(spoolSection)
            \(journalSection)
            \(otherSections)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Starts logshipd on `directory`'s configuration, with `environment` added to this process's, and returns
    /// once its control socket is there.
    public static func start(directory: String, environment: [String: String]? = nil) async throws -> ChildProcess {
        try? FileManager.default.removeItem(atPath: "\(directory)/control.sock")
        let daemon = try await ChildProcess.start(
            Binaries.logshipd, ["--config", "\(directory)/logshipd.yaml"], environment: environment)
        try await waitUntil(within: .seconds(20)) {
            FileManager.default.fileExists(atPath: "\(directory)/control.sock")
        }
        return daemon
    }

    /// Waits until `receiver` has seen `requests` requests, those from sequence `firstHeld` on held unanswered, and
    /// the daemon in `directory` claims exactly their records (the answered ones are acknowledged): the moment at
    /// which a `kill -9` leaves exactly the held records in flight, however slow the machine. Returns their count.
    public static func waitUntilOnlyHeldClaimed(
        directory: String, receiver: TestReceiver, requests: Int, firstHeld: Int
    ) async throws -> Int {
        let held: @Sendable () -> Int = {
            receiver.requests.filter { $0.sequence >= firstHeld }.reduce(0) { $0 + $1.records.count }
        }
        try await eventually(within: .seconds(60)) {
            guard receiver.requests.count == requests else { return false }
            return try await status(directory: directory).claimed == held()
        }
        return held()
    }

    /// The status of the daemon configured in `directory`, as `logctl status --json` prints it.
    public static func status(directory: String) async throws -> DaemonStatus {
        try await status(socket: "\(directory)/control.sock")
    }

    /// The status of the daemon listening on the control socket `socket`, as `logctl status --json` prints it.
    public static func status(socket: String) async throws -> DaemonStatus {
        let result = try await run(Binaries.logctl, ["status", "--json", "--socket", socket])
        guard result.status == 0 else { throw CommandFailed("logctl status", result) }
        return try JSONDecoder().decode(DaemonStatus.self, from: Data(result.standardOutput.utf8))
    }
}
