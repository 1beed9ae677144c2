import Foundation
import Testing

@testable import LogShip

@Suite("Program pages")
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
