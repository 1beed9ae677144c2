import Foundation
import GRDB

extension Row {
    /// The integer stored at `index`, or `nil` when the column holds anything else.
    ///
    /// For values read from the spool file: SQLite does not hold a column to its declared type, and GRDB's
    /// subscripts trap on a value they cannot convert. A damaged or tampered row must be a clean error instead.
    func integer(atIndex index: Int) -> Int64? {
        guard case .int64(let value) = (self[index] as DatabaseValue).storage else { return nil }
        return value
    }

    /// The text stored at `index`, whatever its storage class; `nil` for NULL.
    func text(atIndex index: Int) -> String? {
        switch (self[index] as DatabaseValue).storage {
        case .null: nil
        case .int64(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): value
        case .blob(let data): String(decoding: data, as: UTF8.self)
        }
    }

    /// The bytes stored at `index` as a blob or text; `nil` for anything else.
    func bytes(atIndex index: Int) -> Data? {
        switch (self[index] as DatabaseValue).storage {
        case .blob(let data): data
        case .string(let value): Data(value.utf8)
        case .null, .int64, .double: nil
        }
    }
}
