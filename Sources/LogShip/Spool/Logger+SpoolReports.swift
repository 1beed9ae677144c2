import Logging

extension Logger {
    /// Logs dead letters deleted beyond their share of the spool: they were kept for an operator, who should know.
    func reportEvictedDeadLetters(_ count: Int) {
        guard count > 0 else { return }
        warning(
            "dead letters hold their share of the spool (a quarter of spool.max_bytes); the oldest were deleted",
            metadata: ["logship.spool.dead_letters_evicted": "\(count)"])
    }
}
