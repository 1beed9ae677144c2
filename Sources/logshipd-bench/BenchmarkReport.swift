import Foundation

/// BENCHMARKS.md by its `## ` sections: a measurement rewrites its own sections and keeps the others.
enum BenchmarkReport {
    static var url: URL { PeerComparison.packageRoot.appendingPathComponent("BENCHMARKS.md") }

    /// The first figure of /proc/loadavg: how busy the shared machine was before a measurement.
    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first
            .map(String.init) ?? "?"
    }

    /// The processor's model name from /proc/cpuinfo.
    static func cpuModel() -> String {
        let cpuInfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return cpuInfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
    }

    /// The file's `## ` sections as they are, in order: each its title and its text, title line included.
    static func sections() -> [(title: String, text: String)] {
        guard let file = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return file.components(separatedBy: "\n## ").dropFirst().map { section in
            let title = String(section.prefix { $0 != "\n" })
            return (title, "## " + section.trimmingCharacters(in: .newlines) + "\n")
        }
    }

    /// The sections other than those titled `titles`, as text to follow a writer's own.
    static func sections(besides titles: Set<String>) -> String {
        sections().filter { !titles.contains($0.title) }.map { "\n" + $0.text }.joined()
    }

    /// Writes `text` as the section `title`, in place of the one so titled or after the others.
    static func write(section title: String, _ text: String) throws {
        var file = (try? String(contentsOf: url, encoding: .utf8)) ?? "# Benchmarks\n"
        let section = "## \(title)\n\n" + text.trimmingCharacters(in: .newlines) + "\n"
        if let start = file.range(of: "\n## \(title)\n") {
            let end = file.range(of: "\n## ", range: start.upperBound..<file.endIndex)?.lowerBound ?? file.endIndex
            file.replaceSubrange(file.index(after: start.lowerBound)..<end, with: section)
        } else {
            file += "\n" + section
        }
        try file.write(to: url, atomically: true, encoding: .utf8)
        print("  written to BENCHMARKS.md (\(title))")
    }
}

extension BenchmarkReport {
    /// Writes `text` as the subsection `title` (`### `) of the section `section`, in place of the one so titled;
    /// the subsections follow `order`, and `introduction` opens the section.
    static func write(
        subsection title: String, of section: String, order: [String], introduction: String, _ text: String
    ) throws {
        let current = sections().first { $0.title == section }?.text ?? ""
        var parts: [(title: String, text: String)] = current.components(separatedBy: "\n### ").dropFirst().map { part in
            (String(part.prefix { $0 != "\n" }), "### " + part.trimmingCharacters(in: .newlines))
        }
        parts.removeAll { $0.title == title }
        parts.append((title, "### \(title)\n\n" + text.trimmingCharacters(in: .newlines)))
        parts.sort { (order.firstIndex(of: $0.title) ?? order.count) < (order.firstIndex(of: $1.title) ?? order.count) }
        try write(section: section, introduction + "\n\n" + parts.map(\.text).joined(separator: "\n\n"))
    }
}
