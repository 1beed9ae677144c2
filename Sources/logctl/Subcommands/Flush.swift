import ArgumentParser
import Foundation
import LogShip

/// `logctl flush`: wait until what was accepted so far has been delivered (the end of a deploy script).
struct Flush: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until the records accepted before this call have left the spool.",
        discussion: """
            Returns once every record of --priority and more urgent classes that was accepted before the call \
            has been delivered (or dead-lettered). Exits 1 after --timeout with the number still waiting.
            """)

    @OptionGroup var control: ControlSocketOptions

    @Option(name: .long, help: "The least urgent class waited for: crash, error, warning, info, debug, or 0-7.")
    var priority: String?

    @Option(name: .long, help: "How long to wait: 30s, 2m, or seconds.")
    var timeout = "30s"

    func validate() throws {
        if let priority, PriorityClass.resolve(priority) == nil {
            throw ValidationError("unknown priority \"\(priority)\": use crash, error, warning, info, debug, or 0-7")
        }
        if Self.seconds(timeout) == nil {
            throw ValidationError("invalid --timeout \"\(timeout)\": use 30s, 2m, 500ms, or a number of seconds")
        }
    }

    func run() throws {
        _ = request(ControlRequest(command: .flush, priority: priority, timeout: Self.seconds(timeout)), at: control.path)
        print("flushed: nothing \(priority.map { "of \($0) and above " } ?? "")accepted before is left in the spool")
    }

    /// `30s`, `2m`, `500ms`, `1h`, or a bare number of seconds.
    static func seconds(_ text: String) -> Double? {
        for (suffix, scale) in [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }.flatMap { $0 >= 0 ? $0 : nil }
        }
        return Double(text).flatMap { $0 >= 0 ? $0 : nil }
    }
}
