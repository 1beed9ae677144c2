/// Why a line is not a record's NDJSON line: the first byte that does not fit its shape.
package struct RecordLineError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where the line stops fitting, from its first byte.
    package let offset: Int
    /// What the shape has there.
    package let expected: String

    package var description: String { "expected \(expected) at byte \(offset)" }
}
