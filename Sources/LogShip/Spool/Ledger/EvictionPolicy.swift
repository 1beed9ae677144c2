/// Which records may make room for a new one when the spool is full.
///
/// The lowest class goes first, and within it the sender holding the most bytes (``SpoolLedger``'s eviction). A
/// record never evicts one of a higher class than its own, crash records are never evicted (a crash record that
/// finds only crash records is refused instead), and no record evicts a dead letter (they hold a share of their
/// own, ``SpoolLedger/deadLetterShare``).
enum EvictionPolicy {
    /// The classes whose records may be evicted for a record of `priority`, lowest first.
    static func victims(for priority: PriorityClass) -> [PriorityClass] {
        PriorityClass.allCases.filter { $0 <= min(priority, .error) }
    }
}
