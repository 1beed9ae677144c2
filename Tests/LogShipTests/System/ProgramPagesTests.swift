import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

// Serialized: each test reads this process's resident pages, which another test's release would change.
@Suite("Program pages", .serialized)
struct ProgramPagesTests {
    @Test("only private file mappings that cannot be written and hold no copy of the process's own are released")
    func releasable() {
        let smaps = """
            55cf4e48e000-55cf4eac4000 r--p 00000000 fe:00 6530327 /usr/bin/logshipd
            Rss:                1348 kB
            Anonymous:             0 kB
            Swap:                  0 kB
            VmFlags: rd mr mw me dw sd
            55cf4eac4000-55cf5028e000 r-xp 00635000 fe:00 6530327 /usr/bin/logshipd
            Anonymous:             0 kB
            Swap:                  0 kB
            55cf5028e000-55cf50389000 r--p 01e00000 fe:00 6530327 /usr/bin/logshipd
            Anonymous:          1004 kB
            Swap:                  0 kB
            55cf50389000-55cf52b2b000 rw-p 01efa000 fe:00 6530327 /usr/bin/logshipd
            Anonymous:             0 kB
            Swap:                  0 kB
            7ffa12c00000-7ffa12c99000 r--p 00000000 fe:00 1234 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30
            Anonymous:             0 kB
            Swap:                  8 kB
            7ffa0c000000-7ffa0c081000 rw-p 00000000 00:00 0
            Anonymous:           464 kB
            Swap:                  0 kB
            7ffa1302e000-7ffa1310b000 r-xp 00000000 fe:00 4321 /usr/lib/x86_64-linux-gnu/libzstd.so.1.5.4
            Anonymous:             0 kB
            7ffc0f3ff000-7ffc0f401000 r-xp 00000000 00:00 0                          [vdso]
            Anonymous:             0 kB
            Swap:                  0 kB
            """
        let mappings = FileMapping.all(in: smaps)
        #expect(mappings.map(\.permissions) == ["r--p", "r-xp", "r--p", "rw-p", "r--p", "r-xp"], "files only")
        #expect(mappings.filter(\.isReadOnlyAndUnchanged).map(\.start) == [0x55cf4e48e000, 0x55cf4eac4000],
                "not relocated, swapped, writable or of unknown swap")
        #expect(mappings[1].end == 0x55cf5028e000)
        #expect(mappings[1].offset == 0x635000 && mappings[1].path == "/usr/bin/logshipd")
        #expect(mappings[4].path == "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30")
    }

    @Test("releasing them lowers this process's resident file pages, and its code runs on")
    func releasesPages() throws {
        func residentFileKiB() throws -> Int {
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            let line = status.split(separator: "\n").first { $0.hasPrefix("RssFile:") } ?? ""
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
        }
        let before = try residentFileKiB()
        ProgramPages.releaseStartupPages()
        let after = try residentFileKiB()
        #expect(after < before, "RssFile \(before) kB before, \(after) kB after")
        let encoded = try JSONEncoder().encode(["runs": "on"])
        #expect(String(decoding: encoded, as: UTF8.self) == #"{"runs":"on"}"#)
    }
}

/// Written before the release below, so that its page is the process's own copy.
nonisolated(unsafe) private var writtenGlobal = 0

extension ProgramPagesTests {
    static let literal: StaticString = "program pages: a constant the compiler places in .rodata"

    func mappings() throws -> [FileMapping] {
        FileMapping.all(in: try String(contentsOfFile: "/proc/self/smaps", encoding: .utf8))
    }

    /// The pages of the executable's writable mappings that are the process's own copies.
    func ownPages() throws -> Set<UInt> {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        guard let pageMap = PageMap() else { throw WaitTimeout(description: "/proc/self/pagemap cannot be read") }
        var own: Set<UInt> = []
        for mapping in try mappings() where mapping.path == executable && mapping.permissions.contains("w") {
            guard let entries = pageMap.entries(for: mapping.start..<mapping.end) else {
                throw WaitTimeout(description: "the pagemap of \(mapping.start) cannot be read")
            }
            for (index, entry) in entries.enumerated() where entry.bits >> 63 == 1 && !entry.isPresentFilePage {
                own.insert(mapping.start + UInt(index) * PageMap.pageSize)
            }
        }
        return own
    }

    @Test("the executable's .rodata is found where its string literals are, and not where its globals are")
    func located() throws {
        let constants = try #require(ProgramPages.executableSection(".rodata", in: try mappings()))
        let literal = UInt(bitPattern: Self.literal.utf8Start)
        #expect(constants.contains(literal), "\(constants) holds the literal at \(literal)")
        let global = withUnsafePointer(to: &writtenGlobal) { UInt(bitPattern: $0) }
        #expect(!constants.contains(global), "\(constants) does not hold the global at \(global)")
        let code = try #require(ProgramPages.executableSection(".text", in: try mappings()))
        #expect(!code.overlaps(constants))
    }

    @Test("released, the constants read as before, and every page the process wrote stays in memory, written")
    func ownCopiesStay() throws {
        writtenGlobal = 41
        let before = String(describing: Self.literal)
        let own = try ownPages()
        #expect(!own.isEmpty, "a written global's page is the process's own")
        ProgramPages.releaseStartupPages()
        #expect(try ownPages().isSuperset(of: own), "no copy of the process's own was given back")
        #expect(String(describing: Self.literal) == before)
        #expect(writtenGlobal == 41)
    }

    @Test("a file that is not an ELF executable has no sections")
    func notELF() throws {
        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("#!/bin/sh\necho not ELF\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/script"))
        #expect(ExecutableSections(path: "\(directory)/script") == nil)
        #expect(ExecutableSections(path: "\(directory)/missing") == nil)
        let header = try #require(FileHandle(forReadingAtPath: "/proc/self/exe")?.readData(ofLength: 64))
        try header.write(to: URL(fileURLWithPath: "\(directory)/truncated"))
        #expect(ExecutableSections(path: "\(directory)/truncated") == nil, "an ELF header without the rest")
    }
}
