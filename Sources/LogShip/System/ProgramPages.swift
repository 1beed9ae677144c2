import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The pages of program files (logshipd's executable, the libraries it loads) that starting the daemon mapped,
/// given back once it has started.
///
/// The kernel maps each file page a process touches together with its neighbours (fault-around, 64 KiB), and
/// counts them in its resident memory for as long as it runs. Starting runs much that nothing runs again (reading
/// the configuration, migrating the spool, binding sockets); what runs afterwards faults its own pages back in,
/// from the page cache. README's Memory paragraph has what it saves.
public enum ProgramPages {
    /// Drops this process's mappings of the pages of every private file mapping it cannot write and has no copy
    /// of its own in: code, read-only data, unwind tables. Not the pages the loader relocated (RELRO) nor anything
    /// writable: `MADV_DONTNEED` would throw those copies away.
    ///
    /// Safe while other threads run: a page they need again is read from the page cache as on first use.
    public static func releaseStartupPages() {
        guard let smaps = try? String(contentsOfFile: "/proc/self/smaps", encoding: .utf8) else { return }
        for mapping in FileMapping.all(in: smaps) where mapping.isReadOnlyAndUnchanged {
            let length = Int(mapping.end - mapping.start)
            _ = madvise(UnsafeMutableRawPointer(bitPattern: mapping.start), length, MADV_DONTNEED)
        }
    }
}

/// One mapping of a file as `/proc/self/smaps` describes it.
struct FileMapping: Equatable {
    var start: UInt
    var end: UInt
    /// `r-xp`, `r--p`, `rw-p`, …: readable, writable, executable, private or shared.
    var permissions: Substring
    /// Bytes of it that are the process's own copies (written, or relocated by the loader), in memory and in
    /// swap; `nil` while unknown.
    var anonymousBytes: Int?
    var swappedBytes: Int?

    /// Private, not writable, and every page of it as the file has it.
    var isReadOnlyAndUnchanged: Bool {
        permissions.hasSuffix("p") && !permissions.contains("w") && anonymousBytes == 0 && swappedBytes == 0
    }

    /// The mappings of files in `smaps`: each a header line (`start-end perms offset dev inode path`) followed by
    /// `Key: value kB` lines. Anonymous memory, the stack and the kernel's own (`[vdso]`) name no file.
    static func all(in smaps: String) -> [FileMapping] {
        var mappings: [FileMapping] = []
        var current: FileMapping?
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.first?.hasSuffix(":") == true {
                let bytes = fields.count > 1 ? Int(fields[1]).map { $0 * 1024 } : nil
                if fields[0] == "Anonymous:" { current?.anonymousBytes = bytes }
                if fields[0] == "Swap:" { current?.swappedBytes = bytes }
                continue
            }
            if let current { mappings.append(current) }
            current = nil
            let bounds = fields.first?.split(separator: "-") ?? []
            guard fields.count >= 6, fields[5].hasPrefix("/"), bounds.count == 2,
                let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16)
            else { continue }
            current = FileMapping(start: start, end: end, permissions: fields[1])
        }
        if let current { mappings.append(current) }
        return mappings
    }
}
