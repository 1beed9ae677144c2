/// What a kernel log line says about a crash: its kind, and the victim's pid, name and unit where the text gives
/// them.
///
/// It knows the kernel's own wording: a process killed by a fault (`worker[4243]: segfault at 0 ip …`,
/// `traps: worker[4243] general protection fault ip:…`, `traps: worker[4243] trap divide error ip:…`), the
/// kernel's own failures (`Oops: …`, a die header such as `general protection fault: 0000 [#1] SMP`, `BUG: …`,
/// `kernel BUG at …`, `Kernel panic - not syncing: …`) and the OOM killer's kill (`Out of memory: Killed process
/// 4244 (hog) …`, `oom-kill:…,task_memcg=/system.slice/hog.service,task=hog,pid=4244,…`).
///
/// It reads text only: whether the line is the kernel's (`_TRANSPORT=kernel`) is ``CrashEvidence``'s to decide.
/// Each form is anchored where the kernel puts it (the start of the line, after a process name of at most 15
/// bytes), so that a line that merely quotes the words, such as a file name in a file system's error, is none.
package struct KernelCrashReport: Hashable, Sendable {
    /// Why the kernel reported, as the record's `crash_reason` field spells it.
    package enum Reason: String, Hashable, Sendable, CaseIterable {
        case segfault
        case generalProtection = "general-protection"
        case divideError = "divide-error"
        /// `ud2`, which Swift's and Rust's runtime traps execute.
        case invalidOpcode = "invalid-opcode"
        /// Any other trap that killed a process (int3, overflow, bounds, control protection, …).
        case trap
        case oops
        case bug
        case panic
        case oomKill = "oom-kill"
    }

    package var reason: Reason
    /// The victim's pid, when the line names one.
    package var pid: Int32?
    /// The victim's process name (`comm`, at most 15 bytes), when the line names one.
    package var comm: String?
    /// The victim's systemd unit, from the OOM killer's `task_memcg`.
    package var unit: String?

    package init(reason: Reason, pid: Int32? = nil, comm: String? = nil, unit: String? = nil) {
        self.reason = reason
        self.pid = pid
        self.comm = comm
        self.unit = unit
    }

    /// Recognises `message`; `nil` when it is not a crash report.
    package init?(message: some StringProtocol) {
        self.init(message: Array(message.utf8)[...])
    }

    /// Recognises `message`, the bytes of a journal entry's `MESSAGE`; `nil` when it is not a crash report.
    package init?(message: ArraySlice<UInt8>) {
        guard
            let report = Self.processFault(message) ?? Self.kernelFailure(message) ?? Self.outOfMemoryKill(message)
        else { return nil }
        self = report
    }

    /// The kernel's process names are at most this long (`TASK_COMM_LEN` less its NUL).
    static let commLimit = 15

    // MARK: - A process killed by a fault

    /// `COMM[PID]: segfault at …` (arch/x86/mm/fault.c) and `traps: COMM[PID] DESCRIPTION ip:…`
    /// (arch/x86/kernel/traps.c, `show_signal`).
    private static func processFault(_ line: ArraySlice<UInt8>) -> KernelCrashReport? {
        if let (comm, pid, _) = victim(at: line, followedBy: "]: segfault at ") {
            return KernelCrashReport(reason: .segfault, pid: pid, comm: comm)
        }
        guard line.starts(with: "traps: ".utf8),
            let (comm, pid, rest) = victim(at: line.dropFirst("traps: ".utf8.count), followedBy: "] "),
            let ip = rest.firstRange(of: " ip:".utf8)
        else { return nil }
        let description = rest[..<ip.lowerBound]
        let reason: Reason
        if description.starts(with: "general protection".utf8) {
            reason = .generalProtection
        } else if description.elementsEqual("trap divide error".utf8) {
            reason = .divideError
        } else if description.elementsEqual("trap invalid opcode".utf8) {
            reason = .invalidOpcode
        } else {
            reason = .trap
        }
        return KernelCrashReport(reason: reason, pid: pid, comm: comm)
    }

    /// The process named at the start of `line` as `COMM[PID]`, followed by `terminator` (which begins with the
    /// closing bracket), and what follows it.
    ///
    /// A name may hold brackets itself (`a[1] b`): of the openings within the first 15 bytes, the last that
    /// reads as `[digits` + `terminator` is the kernel's, since what the kernel prints after it has no brackets
    /// that close that early.
    private static func victim(
        at line: ArraySlice<UInt8>, followedBy terminator: String
    ) -> (comm: String, pid: Int32, rest: ArraySlice<UInt8>)? {
        let window = line.prefix(commLimit + 1)
        for opening in window.indices.reversed() where line[opening] == UInt8(ascii: "[") {
            let digits = line[(opening + 1)...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            guard let pid = pid(digits), line[digits.endIndex...].starts(with: terminator.utf8) else { continue }
            let comm = String(decoding: line[..<opening], as: UTF8.self)
            return (comm, pid, line[(digits.endIndex + terminator.utf8.count)...])
        }
        return nil
    }

    // MARK: - The kernel's own failures

    /// An Oops (`Oops: …`, `Internal error: Oops…`, or an x86 die header `DESCRIPTION: 0000 [#1] …`), a BUG
    /// (`BUG: …`, `kernel BUG at …`) or a panic (`Kernel panic - not syncing: …`). None names a victim: the
    /// kernel prints the task on a later line of its own.
    private static func kernelFailure(_ line: ArraySlice<UInt8>) -> KernelCrashReport? {
        if line.starts(with: "Kernel panic - not syncing".utf8) {
            return KernelCrashReport(reason: .panic)
        }
        if line.starts(with: "BUG: ".utf8) || line.starts(with: "kernel BUG at ".utf8) {
            return KernelCrashReport(reason: .bug)
        }
        if line.starts(with: "Oops: ".utf8) || line.starts(with: "Oops - ".utf8)
            || line.starts(with: "Internal error: Oops".utf8) || isDieHeader(line)
        {
            return KernelCrashReport(reason: .oops)
        }
        return nil
    }

    /// `DESCRIPTION: HEX [#N]`, how x86's `__die_header` starts an Oops (`general protection fault: 0000 [#1] SMP`,
    /// `invalid opcode: 0000 [#1] SMP`); the description holds no colon of its own.
    private static func isDieHeader(_ line: ArraySlice<UInt8>) -> Bool {
        guard let counter = line.prefix(256).firstRange(of: " [#".utf8) else { return false }
        let code = line[..<counter.lowerBound].reversed().prefix { isHexDigit($0) }
        let beforeCode = line[..<(counter.lowerBound - code.count)]
        let number = line[counter.upperBound...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        return !code.isEmpty && beforeCode.count > 2 && beforeCode.hasSuffix(": ".utf8)
            && !beforeCode.dropLast(2).contains(UInt8(ascii: ":")) && !number.isEmpty
            && line[number.endIndex...].first == UInt8(ascii: "]")
    }

    // MARK: - The OOM killer

    /// `Out of memory: Killed process PID (COMM) …` (also `Memory cgroup out of memory: …`, and a bare
    /// `Killed process …` from kernels before 5.0), or the summary line
    /// `oom-kill:…,task_memcg=…,task=…,pid=…` (mm/oom_kill.c).
    private static func outOfMemoryKill(_ line: ArraySlice<UInt8>) -> KernelCrashReport? {
        if line.starts(with: "oom-kill:".utf8) {
            return summary(line)
        }
        let killed: ArraySlice<UInt8>
        if line.starts(with: "Killed process ".utf8) {
            killed = line.dropFirst("Killed process ".utf8.count)
        } else if line.starts(with: "Out of memory".utf8) || line.starts(with: "Memory cgroup out of memory".utf8),
            let marker = line.prefix(128).firstRange(of: ": Killed process ".utf8)
        {
            killed = line[marker.upperBound...]
        } else {
            return nil
        }
        let digits = killed.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        var report = KernelCrashReport(reason: .oomKill, pid: pid(digits))
        let afterPid = killed[digits.endIndex...]
        if afterPid.starts(with: " (".utf8) {
            let name = afterPid.dropFirst(2)
            // The name may hold parentheses: the one before " total-vm:" closes it, else the first followed by
            // a space or the end.
            let window = name.prefix(commLimit + " total-vm:".utf8.count + 1)
            let close =
                window.firstRange(of: ") total-vm:".utf8)?.lowerBound
                ?? name.prefix(commLimit + 1).indices.first { index in
                    name[index] == UInt8(ascii: ")")
                        && (index + 1 == name.endIndex || name[index + 1] == UInt8(ascii: " "))
                }
            if let close { report.comm = String(decoding: name[..<close], as: UTF8.self) }
        }
        return report
    }

    /// `oom-kill:constraint=…,task_memcg=CGROUP,task=COMM,pid=PID,uid=UID`. The cgroup path ends at the first
    /// `,task=` (unit names hold no commas, and only the unit matters); the name, which may hold anything, runs
    /// to the last `,pid=`.
    private static func summary(_ line: ArraySlice<UInt8>) -> KernelCrashReport {
        var report = KernelCrashReport(reason: .oomKill)
        guard let memcg = line.firstRange(of: ",task_memcg=".utf8) else { return report }
        let afterMemcg = line[memcg.upperBound...]
        guard let task = afterMemcg.firstRange(of: ",task=".utf8) else {
            report.unit = ControlGroupPath.unit(of: afterMemcg.prefix { $0 != UInt8(ascii: ",") })
            return report
        }
        report.unit = ControlGroupPath.unit(of: afterMemcg[..<task.lowerBound])
        let afterTask = line[task.upperBound...]
        guard let pidMarker = afterTask.lastRange(of: ",pid=".utf8) else { return report }
        report.comm = String(decoding: afterTask[..<pidMarker.lowerBound], as: UTF8.self)
        report.pid = pid(line[pidMarker.upperBound...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        return report
    }

    // MARK: - Helpers

    /// A pid from its decimal digits: positive and within `Int32`, else `nil`.
    private static func pid(_ digits: ArraySlice<UInt8>) -> Int32? {
        guard !digits.isEmpty, digits.count <= 10 else { return nil }
        guard let value = Int32(String(decoding: digits, as: UTF8.self)), value > 0 else { return nil }
        return value
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}

extension Collection where Element: Equatable {
    /// The range of the last occurrence of `other`.
    fileprivate func lastRange(of other: some Collection<Element>) -> Range<Index>? {
        var found: Range<Index>?
        var rest = self[...]
        while let range = rest.firstRange(of: other) {
            found = range
            rest = self[index(after: range.lowerBound)...]
        }
        return found
    }
}

extension ArraySlice where Element == UInt8 {
    fileprivate func hasSuffix(_ suffix: String.UTF8View) -> Bool {
        count >= suffix.count && self.suffix(suffix.count).elementsEqual(suffix)
    }
}
