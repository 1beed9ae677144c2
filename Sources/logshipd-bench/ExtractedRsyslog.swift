import Foundation

/// Debian's rsyslog and rsyslog-elasticsearch as `make bench` extracts them (`dpkg -x`) into
/// `.build-peers/rsyslog/root`, to run from there: installed, rsyslog would take syslog-ng's place as the system's
/// syslog daemon (the two packages conflict).
enum ExtractedRsyslog {
    static let root = PeerComparison.packageRoot.appendingPathComponent(".build-peers/rsyslog/root")
    static var daemon: String { root.appendingPathComponent("usr/sbin/rsyslogd").path }

    /// The directory of its modules, `usr/lib/<multiarch triplet>/rsyslog`, once omelasticsearch is in it.
    static var modules: String? {
        let libraries = root.appendingPathComponent("usr/lib")
        let triplets = (try? FileManager.default.contentsOfDirectory(atPath: libraries.path)) ?? []
        return triplets.map { libraries.appendingPathComponent("\($0)/rsyslog").path }
            .first { FileManager.default.fileExists(atPath: "\($0)/omelasticsearch.so") }
    }

    /// Whether the daemon and its Elasticsearch output are there.
    static var isExtracted: Bool { FileManager.default.isExecutableFile(atPath: daemon) && modules != nil }
}
