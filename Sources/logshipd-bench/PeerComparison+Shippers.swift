import Foundation
import LogShip
import LogShipTestKit

extension PeerComparison {
    /// The shippers compared, each a child process reading its own stream socket in a directory of its own; a
    /// round of runs starts them in this order.
    enum Shipper: String, CaseIterable {
        case syslogNG = "syslog-ng"
        case rsyslog
        case logshipd

        /// The others, which logshipd's figures are divided by.
        static let peers: [Shipper] = allCases.filter { $0 != .logshipd }

        /// The stream socket it reads in `directory`: rsyslog's configuration, kept as the peers' notes have it,
        /// names its own.
        func streamSocket(in directory: String) -> String {
            "\(directory)/\(self == .rsyslog ? "rs.sock" : "ingest.sock")"
        }

        /// Why it cannot run on this machine; nil when it can.
        var missing: String? {
            switch self {
            case .syslogNG:
                FileManager.default.isExecutableFile(atPath: PeerComparison.syslogNG)
                    ? nil : "syslog-ng is not installed: make bench installs it (syslog-ng-core, syslog-ng-mod-http)"
            case .rsyslog:
                ExtractedRsyslog.isExtracted
                    ? nil : "rsyslog is not in \(ExtractedRsyslog.root.path): make bench fetches and extracts it"
            case .logshipd: nil
            }
        }
    }

    static func startLogshipd(
        directory: String, url: String, batch: Int, format: UploadFormat = .ndjson, settings: LogshipdSettings = .init()
    ) throws -> ChildProcess {
        let configuration = try TargetScenarios.Daemon.configure(
            directory: directory, url: url, batch: batch, format: format, cacheBytes: settings.cacheBytes)
        return try ChildProcess(Binaries.logshipd, ["--config", configuration], environment: settings.environment)
    }

    static func startSyslogNG(directory: String, url: String, batch: Int) throws -> ChildProcess {
        let template = try String(
            contentsOf: packageRoot.appendingPathComponent("bench/syslog-ng-http.conf"), encoding: .utf8)
        let configuration = "\(directory)/syslog-ng.conf"
        try template
            .replacingOccurrences(of: "@STREAM@", with: "\(directory)/ingest.sock")
            .replacingOccurrences(of: "@DATAGRAM@", with: "\(directory)/ingest.dgram")
            .replacingOccurrences(of: "@URL@", with: url)
            .replacingOccurrences(of: "@BATCH@", with: String(batch))
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        return try ChildProcess(syslogNG, [
            "-F", "-e", "-f", configuration, "--no-caps", "-R", "\(directory)/persist", "-p", "\(directory)/pid",
            "-c", "\(directory)/ctl",
        ])
    }

    /// Starts the extracted rsyslogd in the foreground with `bench/rsyslog-elasticsearch.conf`: two workers posting
    /// to the receiver on `port` in bulk requests of up to `batch` documents, or one POST per line when `batch` is 1.
    static func startRsyslog(directory: String, port: Int, batch: Int) throws -> ChildProcess {
        let template = try String(
            contentsOf: packageRoot.appendingPathComponent("bench/rsyslog-elasticsearch.conf"), encoding: .utf8)
        let configuration = "\(directory)/rsyslog.conf"
        try template
            .replacingOccurrences(of: "@RUN@", with: directory)
            .replacingOccurrences(of: "@PORT@", with: String(port))
            .replacingOccurrences(of: "@BULK@", with: batch > 1 ? "on" : "off")
            .replacingOccurrences(of: "@BATCH@", with: String(batch))
            .replacingOccurrences(of: "@WORKERS@", with: "2")
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        // Its workDirectory, which rsyslogd does not make.
        try FileManager.default.createDirectory(atPath: "\(directory)/spool", withIntermediateDirectories: true)
        return try ChildProcess(ExtractedRsyslog.daemon, [
            "-n", "-f", configuration, "-i", "\(directory)/rsyslog.pid", "-M", ExtractedRsyslog.modules ?? "",
        ])
    }
}
