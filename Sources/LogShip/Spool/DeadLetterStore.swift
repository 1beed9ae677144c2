/// The records the remote refused for good, kept for an operator (`logctl dead-letters`, `requeue`, `purge`).
///
/// Both spools keep them; they count against the spool's budget up to a quarter of it, beyond which the oldest
/// give way to new ones.
public protocol DeadLetterStore: Sendable {
    /// Dead letters, oldest first.
    func deadLetters(limit: Int) async throws -> [DeadLetter]

    /// Those of `ids` that name a dead letter: what a requeue or purge by id checks first, so that an id that
    /// names none is refused rather than skipped.
    func existingDeadLetters(_ ids: [Int64]) async throws -> Set<Int64>

    /// Moves dead letters back into their class at their original place. Returns how many moved.
    func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> Int

    /// Deletes dead letters. Returns how many were deleted.
    func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int
}
