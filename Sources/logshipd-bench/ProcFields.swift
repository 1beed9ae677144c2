import Foundation
import LogShipTestKit

/// The figures of a `/proc` file of named lines, as `status` and `smaps_rollup` are (`Name:   1234 kB`,
/// `voluntary_ctxt_switches:\t12`).
enum ProcFields {
    /// The first figure of each line named in `names`, every one of them.
    ///
    /// - Throws: When the file cannot be read (its process or thread is gone) or lacks one of `names`.
    static func values(path: String, named names: Set<String>) throws -> [String: Double] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split { $0 == " " || $0 == "\t" }
            guard words.count >= 2, names.contains(String(words[0])), let value = Double(words[1]) else { continue }
            values[String(words[0])] = value
        }
        guard values.count == names.count else {
            throw WaitTimeout(description: "\(path) lacks \(names.subtracting(values.keys).sorted())")
        }
        return values
    }
}
