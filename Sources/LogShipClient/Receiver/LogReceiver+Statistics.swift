extension LogReceiver {
    /// Counts since start.
    public struct Statistics: Hashable, Sendable {
        public var requests = 0
        public var inFlight = 0
        public var maximumInFlight = 0
        /// Connections accepted since start.
        public var connections = 0
    }
}
