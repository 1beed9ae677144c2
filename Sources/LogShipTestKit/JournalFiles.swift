import Foundation
import LogShip

/// Writes real journal files, as journald would, by piping journal export format into
/// `systemd-journal-remote --output=DIR/NAME.journal -` (no running journald needed). A second write to the same
/// file appends to it.
public struct JournalFiles: Sendable {
    /// One entry: fields in order; a value with a newline or other control bytes is written in the binary-safe
    /// form. `__REALTIME_TIMESTAMP` must be among them.
    public struct Entry: Sendable {
        public var fields: [(name: String, value: [UInt8])]

        public init(_ fields: [(String, String)]) {
            self.fields = fields.map { ($0.0, Array($0.1.utf8)) }
        }

        public init(bytes fields: [(String, [UInt8])]) {
            self.fields = fields.map { ($0.0, $0.1) }
        }
    }

    public static let journalRemote = "/lib/systemd/systemd-journal-remote"

    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    /// Appends `entries` to `DIR/name.journal`, creating it if needed.
    public func append(_ entries: [Entry], to name: String = "system") async throws {
        // Encoded off the cooperative pool: a test's entries may hold tens of megabytes (a core) to scan and copy.
        let export = await offloaded {
            var export: [UInt8] = []
            for entry in entries {
                for (name, value) in entry.fields {
                    JournalExportEncoder.appendField(name, value, to: &export)
                }
                export.append(UInt8(ascii: "\n"))
            }
            return Data(export)
        }
        let result = try await run(
            Self.journalRemote, ["--output=\(directory)/\(name).journal", "-"], stdin: export)
        guard result.status == 0 else {
            throw WaitTimeout(description: "systemd-journal-remote failed: \(result.standardError)")
        }
    }

    /// `count` ordinary entries, a microsecond apart from `firstRealtime`, with `message(index)` as their text.
    public static func entries(
        _ count: Int, from firstRealtime: UInt64, unit: String = "app.service", priority: Int = 6,
        message: (Int) -> String
    ) -> [Entry] {
        (0..<count).map { index in
            Entry([
                ("__REALTIME_TIMESTAMP", String(firstRealtime + UInt64(index))),
                ("MESSAGE", message(index)), ("PRIORITY", String(priority)), ("_SYSTEMD_UNIT", unit),
                ("SYSLOG_IDENTIFIER", "app"), ("_HOSTNAME", "journalhost"), ("_PID", "4242"), ("_UID", "1000"),
                ("_GID", "1000"), ("_COMM", "app"),
            ])
        }
    }
}
