/// What is wrong with a configuration: one problem or several, each a line naming its key, which `logshipd`
/// prints before exiting.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public let problems: [String]

    init(_ problem: String) {
        problems = [problem]
    }

    init(problems: [String]) {
        self.problems = problems
    }

    public var description: String { problems.joined(separator: "\n") }
}
