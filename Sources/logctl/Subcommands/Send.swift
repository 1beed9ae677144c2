import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import LogShipClient

/// `logctl send`: hands records to the daemon and exits 0 only once it has accepted them.
struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a record (or one per stdin line) to logshipd.",
        discussion: "Exits 0 once logshipd has accepted every record, non-zero with a one-line reason otherwise.")

    @OptionGroup var control: ControlSocketOptions

    @Option(name: .long, help: "\(PriorityClass.spellings).")
    var priority = "info"

    @Option(name: .long, help: "A field to attach, KEY=VALUE (repeatable).")
    var field: [String] = []

    @Argument(help: "The message; without one, each stdin line is a record.")
    var message: [String] = []

    func validate() throws {
        guard PriorityClass.resolve(priority) != nil else {
            throw ValidationError("unknown priority \"\(priority)\": use \(PriorityClass.spellings)")
        }
        for entry in field where !entry.contains("=") || entry.hasPrefix("=") {
            throw ValidationError("--field \"\(entry)\" is not KEY=VALUE")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let fields = Dictionary(
            field.map { entry -> (String, String) in
                let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (String(parts[0]), String(parts[1]))
            },
            uniquingKeysWith: { _, last in last })
        let sender = SubmissionSender(path: control.path, priority: priority, fields: fields.isEmpty ? nil : fields)
        let demoted: Int
        do {
            demoted = message.isEmpty
                ? try sender.sendLines(fromDescriptor: STDIN_FILENO) : try sender.send([message.joined(separator: " ")])
        } catch {
            fail("\(error)")
        }
        if demoted > 0 {
            UnbufferedOutput.write(
                "logctl: \(demoted) crash record(s) went beyond your user's crash budget and were accepted as errors\n",
                to: STDERR_FILENO)
        }
    }
}
