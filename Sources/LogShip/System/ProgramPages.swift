import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The pages of program files (logshipd's executable, the libraries it loads) that starting the daemon mapped,
/// given back once it has started.
///
/// The kernel maps each file page a process touches together with its neighbours (fault-around, 64 KiB), and
/// counts them in its resident memory for as long as it runs. Starting runs much that nothing runs again (reading
/// the configuration, migrating the spool, binding sockets, starting the services); what runs afterwards faults
/// its own pages back in, from the page cache. README's Memory paragraph has what it saves.
public enum ProgramPages {
    /// Drops this process's mappings of the pages of program files that are still as the file has them: code,
    /// read-only data, unwind tables, and the executable's `.rodata`. Never a page the process has its own copy
    /// of (relocated by the loader, or written): `MADV_DONTNEED` would throw that copy away.
    ///
    /// Which pages are still the file's comes from `/proc/self/pagemap`, page by page, so that a read-only mapping
    /// holding some relocated pages (the loader's RELRO) gives back the rest. Without it, only read-only mappings
    /// with no copy at all are released.
    ///
    /// `.rodata` sits in a writable segment: the Swift compiler marks its constant data writable where it holds
    /// addresses for the loader to fill in, and the linker merges every `.rodata` into one section. Only the loader
    /// writes it, before `main`; its whole pages are made read-only before they are looked at, so that no write can
    /// come between the look and the release (a stray one would crash rather than be lost).
    ///
    /// Safe while other threads run: a page they need again is read from the page cache as on first use.
    public static func releaseStartupPages() {
        // The pagemap says which pages are still the file's; /proc/self/maps then needs no more than where the
        // mappings are (smaps, which walks every page table to count, only for the fallback).
        guard let pageMap = PageMap(), let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else {
            guard let smaps = try? String(contentsOfFile: "/proc/self/smaps", encoding: .utf8) else { return }
            for mapping in FileMapping.all(in: smaps) where mapping.isReadOnlyAndUnchanged {
                release(mapping.start..<mapping.end)
            }
            return
        }
        let mappings = FileMapping.all(in: maps)
        for mapping in mappings where mapping.isPrivateReadOnly {
            releaseFilePages(in: mapping.start..<mapping.end, pageMap)
        }
        if let constants = executableConstantPages(in: mappings),
            mprotect(UnsafeMutableRawPointer(bitPattern: constants.lowerBound), Int(constants.upperBound - constants.lowerBound),
                     PROT_READ) == 0
        {
            releaseFilePages(in: constants, pageMap)
        }
    }

    /// ``releaseStartupPages()`` on a thread of its own, after `delay`: reading /proc and `madvise` block, and the
    /// caller may be an upload loop or the cooperative pool, which are for tasks.
    ///
    /// - Parameter delay: How long the thread waits before it looks (the daemon's services start meanwhile).
    public static func releaseStartupPagesInBackground(after delay: Duration = .zero) {
        Thread.detachNewThread {
            if delay > .zero { Thread.sleep(forTimeInterval: delay.seconds) }
            releaseStartupPages()
        }
    }

    /// The path of this process's executable.
    private static let executablePath = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")

    /// The whole pages of the executable's `.rodata` (the pages it shares with its neighbours hold data that is
    /// written), when they lie within one mapping of the executable.
    static func executableConstantPages(in mappings: [FileMapping]) -> Range<UInt>? {
        let page = PageMap.pageSize
        guard let constants = executableSection(".rodata", in: mappings),
            case (let rounded, false) = constants.lowerBound.addingReportingOverflow(page - 1)
        else { return nil }
        let (start, end) = (rounded / page * page, constants.upperBound / page * page)
        guard start < end, mappings.contains(where: { $0.path == executablePath && $0.start <= start && end <= $0.end })
        else { return nil }
        return start..<end
    }

    /// Where the executable's section `name` is in this process's memory, from the ELF headers of
    /// `/proc/self/exe` and where `mappings` put the start of that file.
    static func executableSection(_ name: String, in mappings: [FileMapping]) -> Range<UInt>? {
        guard let executablePath,
            let fileStart = mappings.first(where: { $0.path == executablePath && $0.offset == 0 }),
            let sections = ExecutableSections(path: "/proc/self/exe"),
            let section = sections.sections[name]
        else { return nil }
        let bias = fileStart.start &- sections.fileStartAddress
        let (lower, upper) = (section.lowerBound &+ bias, section.upperBound &+ bias)
        return lower <= upper ? lower..<upper : nil
    }

    /// Releases the runs of pages in `range` that are in memory and still the file's.
    private static func releaseFilePages(in range: Range<UInt>, _ pageMap: borrowing PageMap) {
        guard let entries = pageMap.entries(for: range) else { return }
        var runStart: UInt?
        for (index, entry) in entries.enumerated() {
            let address = range.lowerBound + UInt(index) * PageMap.pageSize
            if entry.isPresentFilePage {
                if runStart == nil { runStart = address }
            } else if let start = runStart {
                release(start..<address)
                runStart = nil
            }
        }
        if let start = runStart { release(start..<range.upperBound) }
    }

    private static func release(_ range: Range<UInt>) {
        _ = madvise(UnsafeMutableRawPointer(bitPattern: range.lowerBound), Int(range.upperBound - range.lowerBound), MADV_DONTNEED)
    }
}

/// This process's page table as `/proc/self/pagemap` shows it: a 64-bit entry per virtual page.
struct PageMap: ~Copyable {
    static let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))

    /// One page's entry.
    struct Entry {
        var bits: UInt64

        /// In memory (bit 63) and the file's page, not a copy of the process's own (bit 61, "file page or shared
        /// anonymous": in a private file mapping, the file's).
        var isPresentFilePage: Bool { bits >> 63 == 1 && (bits >> 61) & 1 == 1 }
    }

    private let descriptor: Int32

    init?() {
        descriptor = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
    }

    deinit { close(descriptor) }

    /// The entries of the pages of `range` (page-aligned), or `nil` if they cannot be read.
    func entries(for range: Range<UInt>) -> [Entry]? {
        let count = Int((range.upperBound - range.lowerBound) / Self.pageSize)
        var bits = [UInt64](repeating: 0, count: count)
        let bytes = count * MemoryLayout<UInt64>.size
        let read = bits.withUnsafeMutableBytes {
            pread(descriptor, $0.baseAddress, bytes, off_t(range.lowerBound / Self.pageSize) * 8)
        }
        return read == bytes ? bits.map(Entry.init) : nil
    }
}

/// One mapping of a file as `/proc/self/smaps` describes it (or `/proc/self/maps`, which leaves out the counts).
struct FileMapping: Equatable {
    var start: UInt
    var end: UInt
    /// `r-xp`, `r--p`, `rw-p`, …: readable, writable, executable, private or shared.
    var permissions: Substring
    /// Where in the file it starts.
    var offset: UInt = 0
    var path = ""
    /// Bytes of it that are the process's own copies (written, or relocated by the loader), in memory and in
    /// swap; `nil` while unknown.
    var anonymousBytes: Int?
    var swappedBytes: Int?

    /// Private, not writable, and every page of it as the file has it.
    var isReadOnlyAndUnchanged: Bool {
        isPrivateReadOnly && anonymousBytes == 0 && swappedBytes == 0
    }

    /// Private and not writable: what the process has of the file there changes only if the loader relocated it.
    var isPrivateReadOnly: Bool {
        permissions.hasSuffix("p") && !permissions.contains("w")
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
                let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
                let offset = UInt(fields[2], radix: 16)
            else { continue }
            current = FileMapping(
                start: start, end: end, permissions: fields[1], offset: offset,
                path: fields[5...].joined(separator: " "))
        }
        if let current { mappings.append(current) }
        return mappings
    }
}
