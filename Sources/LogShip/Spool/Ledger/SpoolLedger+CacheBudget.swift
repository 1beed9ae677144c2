extension SpoolLedger {
    /// Bytes of lines kept in memory beyond the chunks delivery works on, each class's newest chunk and the first
    /// ``keptHeadChunks`` untouched ones at its head (each at most ``maximumChunkBytes``): `spool.max_cache_bytes`.
    struct CacheBudget: Sendable {
        /// While the remote takes records: a backlog this large is claimed from memory, not read back.
        var delivering: Int
        /// While it takes none (down, refusing, paused): lines no claim will take soon are not worth holding.
        var stalled: Int

        /// At most 1 MiB while stalled: the spool's memory stays flat however long the backlog grows while the
        /// remote is away.
        static let largestStalled = 1 << 20
    }
}

extension SpoolLedger.CacheBudget {
    /// `bytes` while delivering (`spool.max_cache_bytes`), and no more than ``largestStalled`` of it while stalled.
    init(bytes: Int) {
        self.init(delivering: bytes, stalled: Swift.min(bytes, Self.largestStalled))
    }
}
