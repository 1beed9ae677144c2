import ArgumentParser
import LogShipClient

/// `logctl flush`: wait until what was accepted so far has been delivered (the end of a deploy script).
struct Flush: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until the records accepted before this call have left the spool.",
        discussion: """
            Returns once every record of --priority and more urgent classes that was accepted before the call \
            has been delivered (or dead-lettered). Exits 1 after --timeout with the number still waiting.
            """)

    @OptionGroup var control: ControlSocketOptions

    @Option(name: .long, help: "The least urgent class waited for: \(PriorityClass.spellings).")
    var priority: String?

    // Unconditional, so that "-1" reaches validation and gets its error instead of passing for an option.
    @Option(
        name: .long, parsing: .unconditional,
        help: "How long to wait: 500ms, 30s, 2m, 1h or seconds, as in the configuration.")
    var timeout = "30s"

    func validate() throws {
        if let priority, PriorityClass.resolve(priority) == nil {
            throw ValidationError("unknown priority \"\(priority)\": use \(PriorityClass.spellings)")
        }
        if DurationText.parse(timeout) == nil {
            throw ValidationError("invalid --timeout \"\(timeout)\": expected \(DurationText.expected)")
        }
    }

    func run() throws {
        _ = request(
            ControlRequest(command: .flush, priority: priority, timeout: DurationText.parse(timeout)?.seconds),
            at: control.path)
        print("flushed: nothing \(priority.map { "of \($0) and above " } ?? "")accepted before is left in the spool")
    }
}
