#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Prints received records one per line, as `logctl receive` shows them.
public final class RecordPrinter: Sendable {
    private let colored: Bool
    private let quiet: Bool
    private let json: Bool
    private let deduplicator: RecordDeduplicator?
    private let keepsDuplicates: Bool
    /// Serialises output: requests arrive on several connections at once.
    private let output = Mutex(())

    /// - Parameters:
    ///   - colored: Highlight crash and error records (for a terminal).
    ///   - quiet: Print one summary line per request instead of the records.
    ///   - deduplicator: Recognises records received before; `nil` prints every record as it came.
    ///   - keepsDuplicates: Print the repeats the deduplicator finds, marked, instead of dropping them.
    ///   - json: Print each request as a JSON object on one line (``ReceivedRequestJSON``) instead of text.
    public init(
        colored: Bool, quiet: Bool, deduplicator: RecordDeduplicator? = nil, keepsDuplicates: Bool = false,
        json: Bool = false
    ) {
        self.colored = colored
        self.quiet = quiet
        self.json = json
        self.deduplicator = deduplicator
        self.keepsDuplicates = keepsDuplicates
    }

    public func print(_ request: LogReceiver.Request) {
        let repeats = deduplicator?.repeats(in: request) ?? []
        let text = text(for: request, repeats: repeats, duplicatesSinceStart: deduplicator?.duplicates ?? 0)
        output.withLock { _ in UnbufferedOutput.write(text, to: STDOUT_FILENO) }
    }

    /// What ``print(_:)`` writes for `request`: its records, each marked with the sender's batch number
    /// (`X-Logshipd-Batch`) and, when the receiver refused the request, with the status it answered, so that a
    /// refused record is never mistaken for a delivered one. The records at `repeats` were received before:
    /// left out with a line that counts them, or marked `duplicate` when the printer keeps duplicates.
    public func text(
        for request: LogReceiver.Request, repeats: Set<Int> = [], duplicatesSinceStart: Int = 0
    ) -> String {
        if json {
            return ReceivedRequestJSON(
                request, repeats: repeats, duplicatesSinceStart: duplicatesSinceStart, quiet: quiet,
                keepsDuplicates: keepsDuplicates
            ).line
        }
        let batch = request.batch.map { "batch \($0)" } ?? "no batch number"
        let refused = (200..<300).contains(request.status) ? nil : "refused \(request.status)"
        var text = ""
        if quiet {
            let fresh = request.records.count - (keepsDuplicates ? 0 : repeats.count)
            text = "request \(request.sequence) (\(batch)): \(fresh) records, answered \(request.status)\n"
        } else {
            let tags = [request.batch.map { "#\($0)" }, refused].compactMap { $0 }
            let mark = tags.isEmpty ? "" : "[\(tags.joined(separator: " "))] "
            let repeatMark = "[\((tags + ["duplicate"]).joined(separator: " "))] "
            for (index, record) in request.records.enumerated() {
                if !repeats.contains(index) {
                    text += mark + line(for: record) + "\n"
                } else if keepsDuplicates {
                    text += repeatMark + line(for: record) + "\n"
                }
            }
        }
        if !repeats.isEmpty {
            let fate = keepsDuplicates ? "shown as duplicate" : "dropped"
            text += "request \(request.sequence) (\(batch)): \(repeats.count) duplicate record(s) \(fate), ids "
                + "received before (\(duplicatesSinceStart) since start)\n"
        }
        if request.malformedLines > 0 {
            text += "request \(request.sequence) (\(batch)): \(request.malformedLines) lines were not records\n"
        }
        return text
    }

    /// `2026-11-21T10:00:00.123456Z crash    host comm[pid] uid=0 message {fields}`, every text from the record
    /// with its control characters escaped (``TerminalText``).
    public func line(for record: LogRecord) -> String {
        let priority = record.priority.description
        var parts = [
            record.timestamp.rfc3339, priority + String(repeating: " ", count: max(0, 7 - priority.count)),
            TerminalText.escaped(record.host),
        ]
        if let peer = record.peer {
            parts.append("\(TerminalText.escaped(peer.comm ?? "?"))[\(peer.pid)] uid=\(peer.uid)")
        }
        parts.append(record.source.rawValue + ":")
        parts.append(TerminalText.escaped(record.message))
        if !record.fields.isEmpty {
            let fields = record.fields.map { "\(TerminalText.escaped($0.key))=\(TerminalText.escaped($0.value))" }
            parts.append("{" + fields.joined(separator: " ") + "}")
        }
        if record.truncated { parts.append("[truncated]") }
        let line = parts.joined(separator: " ")
        guard colored else { return line }
        switch record.priority {
        case .crash: return "\u{1B}[1;97;41m\(line)\u{1B}[0m"
        case .error: return "\u{1B}[1;31m\(line)\u{1B}[0m"
        case .warning: return "\u{1B}[33m\(line)\u{1B}[0m"
        default: return line
        }
    }
}
