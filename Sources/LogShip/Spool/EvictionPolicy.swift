/// Which records may make room for a new one when the spool is full.
///
/// The lowest class goes first, oldest first. A record never evicts one of a higher class than its own, and crash
/// records are never evicted: a crash record that finds only crash records is refused instead.
enum EvictionPolicy {
    /// The classes whose records may be evicted for a record of `priority`, lowest first.
    static func victims(for priority: PriorityClass) -> [PriorityClass] {
        PriorityClass.allCases.filter { $0 <= min(priority, .error) }
    }
}
