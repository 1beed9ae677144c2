#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Prints received records one per line, as `logctl receive` shows them.
public final class RecordPrinter: Sendable {
    private let colored: Bool
    private let quiet: Bool
    /// Serialises output: requests arrive on several connections at once.
    private let output = Mutex(())

    /// - Parameters:
    ///   - colored: Highlight crash and error records (for a terminal).
    ///   - quiet: Print one summary line per request instead of the records.
    public init(colored: Bool, quiet: Bool) {
        self.colored = colored
        self.quiet = quiet
    }

    public func print(_ request: LogReceiver.Request) {
        let text = text(for: request)
        output.withLock { _ in UnbufferedOutput.write(text, to: STDOUT_FILENO) }
    }

    /// What ``print(_:)`` writes for `request`: its records, each marked with the sender's batch number
    /// (`X-Logshipd-Batch`) and, when the receiver refused the request, with the status it answered, so that a
    /// refused record is never mistaken for a delivered one.
    public func text(for request: LogReceiver.Request) -> String {
        let batch = request.batch.map { "batch \($0)" } ?? "no batch number"
        let refused = (200..<300).contains(request.status) ? nil : "refused \(request.status)"
        var text = ""
        if quiet {
            text = "request \(request.sequence) (\(batch)): \(request.records.count) records, answered \(request.status)\n"
        } else {
            let tags = [request.batch.map { "#\($0)" }, refused].compactMap { $0 }
            let mark = tags.isEmpty ? "" : "[\(tags.joined(separator: " "))] "
            for record in request.records {
                text += mark + line(for: record) + "\n"
            }
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
