/// One caller's entries for a commit, the input position they bring the spool to (if the caller has one),
/// whether they may evict, and what becomes of those that find no room.
struct SpoolAppend: Sendable {
    var entries: [SpoolEntry]
    var position: InputPosition?
    /// Whether older records may be evicted for these; if not, the group is stored whole or not at all.
    var evicting = true
    /// Whether entries that find no room wait for it (a socket's, whose sender is told nothing); if not, they
    /// are refused, and the caller tells its sender why.
    var waitsForRoom = false
}
