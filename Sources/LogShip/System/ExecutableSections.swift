#if canImport(Glibc)
import Glibc
#endif

/// The sections of an ELF executable (64-bit, little-endian: what logshipd is built as) and where its first
/// loadable segment wants to be, read from the file's headers.
struct ExecutableSections {
    /// A section's link-time address range.
    var sections: [String: Range<UInt>]
    /// The link-time address of the segment that maps the start of the file: a mapping of offset 0 starts at it
    /// plus the load bias.
    var fileStartAddress: UInt

    /// Reads the headers of the ELF file at `path`; `nil` when it cannot be read or is not an ELF file of this
    /// layout.
    init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        func read(_ count: Int, at offset: UInt64) -> [UInt8]? {
            guard count > 0, count < 16 << 20, let offset = off_t(exactly: offset) else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, offset) }
            return got == count ? bytes : nil
        }
        // e_ident: "\u{7f}ELF", ELFCLASS64, ELFDATA2LSB.
        guard let header = read(64, at: 0), header[0..<4] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2, header[5] == 1
        else { return nil }
        let programHeaders = (offset: header.loadInteger(UInt64.self, at: 32), size: Int(header.loadInteger(UInt16.self, at: 54)),
                              count: Int(header.loadInteger(UInt16.self, at: 56)))
        let sectionHeaders = (offset: header.loadInteger(UInt64.self, at: 40), size: Int(header.loadInteger(UInt16.self, at: 58)),
                              count: Int(header.loadInteger(UInt16.self, at: 60)))
        let namesIndex = Int(header.loadInteger(UInt16.self, at: 62))
        guard programHeaders.size >= 56, sectionHeaders.size >= 64, namesIndex < sectionHeaders.count,
            let segments = read(programHeaders.size * programHeaders.count, at: programHeaders.offset),
            let table = read(sectionHeaders.size * sectionHeaders.count, at: sectionHeaders.offset)
        else { return nil }

        // The PT_LOAD segment of file offset 0.
        let loadSegment: UInt32 = 1
        guard let fileStart = (0..<programHeaders.count).lazy.map({ $0 * programHeaders.size }).first(where: {
            segments.loadInteger(UInt32.self, at: $0) == loadSegment && segments.loadInteger(UInt64.self, at: $0 + 8) == 0
        }) else { return nil }
        fileStartAddress = UInt(segments.loadInteger(UInt64.self, at: fileStart + 16))

        let namesHeader = namesIndex * sectionHeaders.size
        guard let namesSize = Int(exactly: table.loadInteger(UInt64.self, at: namesHeader + 32)),
            let names = read(namesSize, at: table.loadInteger(UInt64.self, at: namesHeader + 24))
        else { return nil }
        sections = [:]
        for index in 0..<sectionHeaders.count {
            let entry = index * sectionHeaders.size
            // Sections the loader maps (SHF_ALLOC), whose bounds fit an address.
            let nameStart = Int(table.loadInteger(UInt32.self, at: entry))
            let isMapped = table.loadInteger(UInt64.self, at: entry + 8) & 0x2 != 0
            let address = UInt(table.loadInteger(UInt64.self, at: entry + 16))
            let size = UInt(table.loadInteger(UInt64.self, at: entry + 32))
            guard isMapped, nameStart < names.count, case (let end, false) = address.addingReportingOverflow(size)
            else { continue }
            let nameEnd = names[nameStart...].firstIndex(of: 0) ?? names.endIndex
            sections[String(decoding: names[nameStart..<nameEnd], as: UTF8.self)] = address..<end
        }
    }
}

extension [UInt8] {
    /// The little-endian integer at `offset`.
    fileprivate func loadInteger<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }
}
