/// The records the remote refused for good, kept for an operator (`logctl dead-letters`, `requeue`, `purge`).
///
/// Both spools keep them; they count against the spool's budget up to a quarter of it, beyond which the oldest
/// give way to new ones.
public protocol DeadLetterStore: Sendable {
    /// Dead letters, oldest first.
    func deadLetters(limit: Int) async throws -> [DeadLetter]

    /// Moves dead letters back into their class at their original place. Returns how many moved.
    ///
    /// - Throws: ``UnknownDeadLetters`` when some of the selected ids name no dead letter: checked in the same
    ///   write that moves them, so an id is never skipped, and nothing is moved then.
    func requeueDeadLetters(_ selection: DeadLetterSelection) async throws -> Int

    /// Deletes dead letters. Returns how many were deleted.
    ///
    /// - Throws: ``UnknownDeadLetters`` as ``requeueDeadLetters(_:)`` does; nothing is deleted then.
    func purgeDeadLetters(_ selection: DeadLetterSelection) async throws -> Int
}
