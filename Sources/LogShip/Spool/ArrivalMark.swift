/// How far arrival has come in each class at one moment: the newest sequence of each, so that `logctl flush` can
/// wait for exactly the records accepted before it began.
public struct ArrivalMark: Hashable, Sendable {
    /// The newest sequence per class at that moment (0 before any record of the class).
    public var sequences: [PriorityClass: Int64]

    public init(sequences: [PriorityClass: Int64]) {
        self.sequences = sequences
    }
}
