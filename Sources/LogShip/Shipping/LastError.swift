import Foundation

/// A failure and when it happened: what `logctl status` shows as `last error`.
public struct LastError: Hashable, Sendable {
    /// The failure in one line of words: a request's (``UploadError/description``), or the spool's while it
    /// settled one.
    public var reason: String
    public var at: Date

    public init(reason: String, at: Date) {
        self.reason = reason
        self.at = at
    }
}
