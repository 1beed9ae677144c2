import Foundation

/// The fields of a `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) line that follow the command name.
///
/// The command name may hold spaces and parentheses, so the fields are counted from its last closing
/// parenthesis: `fields[0]` is field 3 of proc(5), the state.
public struct ProcessStat: Sendable {
    private let fields: [Substring]

    /// Reads `path`; throws when it cannot be read (the process or thread is gone) or holds no command name.
    public init(path: String) throws {
        let line = try String(contentsOfFile: path, encoding: .utf8)
        guard let nameEnd = line.lastIndex(of: ")") else {
            throw WaitTimeout(description: "no command name in \(path)")
        }
        fields = line[line.index(after: nameEnd)...].split(separator: " ")
    }

    /// The state: `R` running, `S` sleeping, `T` stopped, …
    public var state: Substring { fields[0] }

    /// User and system CPU time (`utime` + `stime`, fields 14 and 15), in clock ticks.
    public var cpuTicks: Double { (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0) }
}
