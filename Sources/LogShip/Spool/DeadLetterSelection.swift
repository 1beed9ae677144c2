/// Which dead letters a command applies to.
public enum DeadLetterSelection: Hashable, Sendable {
    case all
    case ids([Int64])
}

/// A requeue or purge named ids of which some name no dead letter; nothing was done.
public struct UnknownDeadLetters: Error, Hashable, Sendable, CustomStringConvertible {
    /// The ids that name none, in the order given.
    public var ids: [Int64]

    public var description: String { "no dead letter has id \(ids.map(String.init).joined(separator: ", "))" }
}
