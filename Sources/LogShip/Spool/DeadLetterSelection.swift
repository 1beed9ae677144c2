/// Which dead letters a command applies to.
public enum DeadLetterSelection: Hashable, Sendable {
    case all
    case ids([Int64])
}
