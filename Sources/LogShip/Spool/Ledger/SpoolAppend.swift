/// One caller's entries for a commit, the input position they bring the spool to (if the caller has one), and
/// whether they may evict.
struct SpoolAppend: Sendable {
    var entries: [SpoolEntry]
    var position: InputPosition?
    /// Whether older records may be evicted for these; if not, the group is stored whole or not at all.
    var evicting = true
}
