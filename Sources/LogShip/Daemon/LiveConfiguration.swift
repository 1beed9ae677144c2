import Foundation
import Synchronization

/// The configuration a daemon runs with, and the parts of it that follow a reload without a restart: the upload
/// URLs (not how many there are), format, compression, headers, timeout, credentials and TLS files, the retry
/// bounds and `Retry-After` cap, the link's budget (which ends an operator's `logctl throttle`), the batch limits,
/// the crash budget, the journal's selection (units, excluded units, least priority) and the log level. A
/// configuration that changes anything else is refused whole: a key that needs a restart and differs is as likely
/// a file read half-written as a wish.
final class LiveConfiguration: Sendable {
    private let current: Mutex<DaemonConfiguration>
    /// One per endpoint, in order of preference; none when a test's uploader stands in for them.
    private let uploaders: [HTTPUploader]
    private let shipper: Shipper
    private let intake: RecordIntake
    private let journal: JournalIngestServer?
    private let logLevel: LogLevelControl?

    init(
        _ configuration: DaemonConfiguration, uploaders: [HTTPUploader], shipper: Shipper, intake: RecordIntake,
        journal: JournalIngestServer?, logLevel: LogLevelControl?
    ) {
        current = Mutex(configuration)
        self.uploaders = uploaders
        self.shipper = shipper
        self.intake = intake
        self.journal = journal
        self.logLevel = logLevel
    }

    var configuration: DaemonConfiguration { current.withLock { $0 } }

    /// Applies `new`, all of which can change while running.
    ///
    /// - Throws: ``ConfigurationError`` when a key that needs a restart differs, or the new configuration cannot
    ///   be applied; nothing is changed then.
    func apply(_ new: DaemonConfiguration) throws {
        let restartOnly = Self.restartOnlyChanges(from: configuration, to: new)
        guard restartOnly.isEmpty else {
            throw ConfigurationError(
                "\(restartOnly.joined(separator: ", ")) changed, which takes a restart (systemctl restart logshipd)")
        }
        let configurations = try Self.uploadConfigurations(new)
        // Each checked before any is changed: a reload applies whole or not at all.
        let prepared = try zip(uploaders, configurations).map { try $0.prepare($1) }
        for (uploader, configuration) in zip(uploaders, prepared) { uploader.use(configuration) }
        current.withLock { $0 = new }
        shipper.reconfigure(Self.shipperSettings(new))
        intake.updateCrashBudget(CrashBudget.Settings(new.intake))
        journal?.updateSelection(new.journal)
        logLevel?.level = new.logLevel
    }

    /// The shipper's settings: requests in flight, batch limits, retry bounds and the link's budget.
    static func shipperSettings(_ configuration: DaemonConfiguration) -> ShipperStateMachine.Settings {
        let upload = configuration.upload
        return ShipperStateMachine.Settings(
            slots: upload.maxInFlight,
            limits: BatchLimits(maxRecords: configuration.batch.maxRecords, maxBytes: configuration.batch.maxBytes),
            retry: RetryPolicy.Bounds(
                initial: upload.retryInitial, maximum: upload.retryMax, retryAfterMaximum: upload.retryAfterMax),
            budget: upload.rate, endpoints: upload.endpoints.map(\.shownName))
    }

    /// The uploaders' settings, one per endpoint in order of preference, each with the credentials and TLS
    /// settings it uses. With `tls.server_name`, the URL names that host, which the client reaches at the URL's
    /// own host (so the certificate and SNI are checked against the name).
    ///
    /// - Throws: ``ConfigurationError`` when a TLS file cannot be read (the loader has checked them already).
    static func uploadConfigurations(_ configuration: DaemonConfiguration) throws -> [HTTPUploader.Configuration] {
        try configuration.upload.endpoints.map { endpoint in
            let auth = configuration.auth(of: endpoint)
            let tls = configuration.tls(of: endpoint)
            var url = endpoint.url
            var connectHost: String?
            if !tls.serverName.isEmpty, var components = URLComponents(string: url) {
                connectHost = components.encodedHost
                components.host = tls.serverName
                url = components.string ?? url
            }
            return HTTPUploader.Configuration(
                url: url, headers: configuration.upload.headers, timeout: configuration.upload.timeout,
                format: configuration.upload.format, compression: configuration.upload.compression,
                bearerTokenFile: auth.bearerTokenFile.isEmpty ? nil : auth.bearerTokenFile,
                basicAuthentication: auth.basicUser.isEmpty ? nil : (auth.basicUser, auth.basicPasswordFile),
                tls: try TLSSettings.clientConfiguration(tls),
                trustDescription: TLSSettings.trustDescription(tls), connectHost: connectHost)
        }
    }

    /// The keys that differ between `old` and `new` and only take effect at start-up.
    static func restartOnlyChanges(from old: DaemonConfiguration, to new: DaemonConfiguration) -> [String] {
        let checks: [(String, (DaemonConfiguration) -> AnyHashable)] = [
            ("ingest.stream", { $0.ingest.stream }), ("ingest.datagram", { $0.ingest.datagram }),
            ("ingest.control", { $0.ingest.control }), ("ingest.socket_mode", { $0.ingest.socketMode }),
            ("ingest.max_record_bytes", { $0.ingest.maxRecordBytes }),
            ("ingest.max_connections", { $0.ingest.maxConnections }),
            ("ingest.max_connections_per_user", { $0.ingest.maxConnectionsPerUser }),
            ("ingest.control_idle_timeout", { $0.ingest.controlIdleTimeout }),
            ("metrics.listen", { $0.metrics.listen }), ("metrics.max_connections", { $0.metrics.maxConnections }),
            ("metrics.idle_timeout", { $0.metrics.idleTimeout }),
            ("upload.max_in_flight", { $0.upload.maxInFlight }),
            ("upload.url (how many endpoints it lists)", { $0.upload.endpoints.count }),
            ("upload.shutdown_timeout", { $0.upload.shutdownTimeout }),
            ("spool.path", { $0.spool.path }), ("spool.max_bytes", { $0.spool.maxBytes }),
            ("spool.min_free_disk", { $0.spool.minFreeDisk }), ("spool.max_cache_bytes", { $0.spool.maxCacheBytes }),
            ("journal.enabled", { $0.journal.enabled }), ("journal.directory", { $0.journal.directory }),
            ("journal.start_at", { $0.journal.startAt }), ("journal.matches", { $0.journal.matches }),
            ("journal.fields", { $0.journal.fields }), ("journal.max_field_bytes", { $0.journal.maxFieldBytes }),
            ("host.name", { $0.hostname }),
        ]
        return checks.filter { $0.1(old) != $0.1(new) }.map(\.0)
    }
}
