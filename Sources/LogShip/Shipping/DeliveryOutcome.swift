import Foundation

/// What one `LogOperation` did.
public enum DeliveryOutcome: Hashable, Sendable {
    /// The class had nothing unclaimed.
    case nothingToSend
    /// The class's oldest record waits for its retry time.
    case waiting(until: Date)
    /// The class must wait for the link's budget (``UploadThrottle``) until then; nothing was claimed.
    case throttled(until: Date)
    /// A batch was claimed and every record of it settled: delivered, dead-lettered or put back.
    case attempted(DeliveryReport)
}
