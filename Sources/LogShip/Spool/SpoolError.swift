/// Errors thrown by a spool.
public struct SpoolError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case closed
        case diskFull
        case inUse
        case storage
    }

    private let code: Code
    private let detail: String

    private init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The spool has been closed.
    public static let closed = SpoolError(.closed)

    /// The disk holding the spool file at `path` had no room for a write, even with the spool's reserve given.
    public static func diskFull(_ path: String) -> SpoolError { SpoolError(.diskFull, path) }

    /// Another process holds the spool file.
    public static func inUse(_ path: String) -> SpoolError { SpoolError(.inUse, path) }

    /// The storage failed.
    public static func storage(_ detail: String) -> SpoolError { SpoolError(.storage, detail) }

    public var description: String {
        switch code {
        case .closed: "spool closed"
        case .diskFull: "spool: the disk holding \(detail) is full (SQLite found no room to write)"
        case .inUse: "spool \(detail) is in use by another process (is another logshipd running?)"
        case .storage: "spool: \(detail)"
        }
    }
}
