/// A libsystemd journal call failed.
public struct JournalError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was being done: `open journal directory /var/log/journal`.
    public let call: String
    /// The negative errno the call returned.
    public let code: Int32

    init(call: String, _ result: Int32) {
        self.call = call
        code = -result
    }

    public var description: String { "journal: cannot \(call): \(SystemError.describe(code))" }
}
