import Foundation

extension PriorityClass {
    /// The `Operation.QueuePriority` of the operations that carry this class: the upload queue starts the most
    /// urgent waiting class first.
    var queuePriority: Operation.QueuePriority {
        switch self {
        case .crash: .veryHigh
        case .error: .high
        case .warning: .normal
        case .info: .low
        case .debug: .veryLow
        }
    }
}
