/// Errors thrown by a spool.
public struct SpoolError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case closed
        case diskFull
        case inUse
        case storage
        case notFlushed
    }

    private let code: Code
    private let detail: String

    private init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The spool has been closed.
    public static let closed = SpoolError(.closed)

    /// The disk is full and nothing could be evicted to make room.
    public static let diskFull = SpoolError(.diskFull)

    /// Another process holds the spool file.
    public static func inUse(_ path: String) -> SpoolError { SpoolError(.inUse, path) }

    /// The storage failed.
    public static func storage(_ detail: String) -> SpoolError { SpoolError(.storage, detail) }

    /// Records were committed but could not be flushed to the disk: they may be stored, in the page cache only.
    public static func notFlushed(_ detail: String) -> SpoolError { SpoolError(.notFlushed, detail) }

    /// Whether the records of the failed call may be stored all the same (``notFlushed(_:)``), so that sending
    /// them again may duplicate them.
    public var mayBeStored: Bool { code == .notFlushed }

    public var description: String {
        switch code {
        case .closed: "spool closed"
        case .diskFull: "spool: disk full and nothing left to evict"
        case .inUse: "spool \(detail) is in use by another process (is another logshipd running?)"
        case .storage: "spool: \(detail)"
        case .notFlushed: "spool: committed but not flushed to the disk: \(detail)"
        }
    }
}
