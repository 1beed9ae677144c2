import Foundation

extension Shipper {
    /// Counts since start, and what delivery is doing now.
    public struct Statistics: Sendable {
        /// Counts of every batch settled since start.
        public var totals = DeliveryCounts()
        public var operationsInFlight = 0
        /// Set while all delivery is paused after a failure.
        public var pause: DeliveryPause?
        /// Set after a pause ended while nothing has been accepted since.
        public var lastFailure: DeliveryPause?
        /// Whether an operator paused uploads (`logctl pause`).
        public var pausedByOperator = false
        /// The last failure since start, and when.
        public var lastError: (reason: String, at: Date)?
        /// Seconds each class has waited for the link's budget since start.
        public var throttledSeconds: [PriorityClass: TimeInterval] = [:]
    }
}
