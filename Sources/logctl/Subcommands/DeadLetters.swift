import ArgumentParser
import LogShipClient

/// `logctl dead-letters`: records the remote refused for good, and what to do with them.
struct DeadLetters: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List dead letters, or requeue or purge them.",
        discussion: """
            Without --requeue or --purge, lists dead letters oldest first: id, time, class, status, reason, and \
            the record. --requeue puts records back in their class at their old place; --purge deletes them.
            """)

    @OptionGroup var control: ControlSocketOptions

    @Flag(name: .long, help: "Put the named dead letters back in the spool for delivery.")
    var requeue = false

    @Flag(name: .long, help: "Delete the named dead letters.")
    var purge = false

    @Flag(name: .long, help: "With --requeue or --purge: every dead letter.")
    var all = false

    @Option(name: .long, help: "The most dead letters to list.")
    var limit = 100

    @Argument(help: "Dead letter ids, for --requeue or --purge.")
    var ids: [Int64] = []

    func validate() throws {
        if requeue && purge { throw ValidationError("use --requeue or --purge, not both") }
        if requeue || purge {
            let verb = requeue ? "--requeue" : "--purge"
            if all && !ids.isEmpty { throw ValidationError("\(verb) takes dead letter ids or --all, not both") }
            if !all && ids.isEmpty {
                throw ValidationError(
                    "\(verb) needs the ids of the dead letters (logctl dead-letters lists them), or --all")
            }
        } else if all || !ids.isEmpty {
            throw ValidationError("ids and --all go with --requeue or --purge")
        }
        let limits = ControlRequest.deadLetterLimits
        if !limits.contains(limit) {
            throw ValidationError("--limit must be from \(limits.lowerBound) to \(limits.upperBound)")
        }
    }

    func run() throws {
        guard requeue || purge else {
            list()
            return
        }
        let command: ControlRequest.Command = requeue ? .requeue : .purge
        let response = request(
            ControlRequest(command: command, ids: ids.isEmpty ? nil : ids, all: all ? true : nil), at: control.path)
        print("\(requeue ? "requeued" : "purged") \(response.count ?? 0) dead letter(s)")
    }

    private func list() {
        let response = request(ControlRequest(command: .deadLetters, limit: limit), at: control.path)
        let letters = response.deadLetters ?? []
        guard !letters.isEmpty else {
            print("no dead letters")
            return
        }
        // The reason is the remote's answer and the line a sender's record: neither may drive the terminal.
        let text: (String) -> String = TerminalText.escaped
        for letter in letters {
            let status = letter.status.map(String.init) ?? "-"
            print("\(letter.id)  \(text(letter.failedAt))  \(text(letter.priority))  \(status)  \(text(letter.reason))")
            print("    \(text(letter.line))")
        }
    }
}
