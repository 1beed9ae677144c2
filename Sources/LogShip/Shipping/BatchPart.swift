/// Part of a refused batch, still claimed, waiting to be sent on its own while the refused records are isolated.
struct BatchPart: Hashable, Sendable {
    /// What is being found out about the batch the part comes from.
    enum Isolation: Hashable, Sendable {
        /// The remote refused the batch for what its records hold: its parts are halved until the refused records
        /// are alone, and those are dead-lettered.
        case records
        /// The remote refused the batch with an unclear 4xx: the records, or everything? (``RefusalProbes``)
        case probe(RefusalProbes.ProbeID)
    }

    var batch: Batch
    var isolation: Isolation
    /// The endpoint whose refusal it isolates (a place in `upload.url`): only that one's answers count for the
    /// isolation. Sent to another (delivery moved meanwhile), the part is a batch like any other there; `nil` once
    /// a reload gave that place another URL.
    var endpoint: Int?
}
