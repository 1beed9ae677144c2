import Foundation
import Logging

/// Everything `logshipd` reads from `config/logshipd.yaml` and `LOGSHIPD_*` environment variables.
///
/// Defaults are the documented ones; ``ConfigurationLoader`` fills this in and rejects unknown keys and bad values.
public struct DaemonConfiguration: Sendable {
    public struct Ingest: Sendable {
        /// Stream socket path; empty disables it.
        public var stream = "/run/logshipd/ingest.sock"
        /// Datagram socket path; empty disables it.
        public var datagram = "/run/logshipd/ingest.dgram"
        /// Control socket path for `logctl`.
        public var control = "/run/logshipd/control.sock"
        public var socketMode: UInt32 = 0o660
        public var maxRecordBytes = 65_536
        /// Connections each stream socket serves at once; more wait (see ``UnixStreamListener/OverCap``).
        public var maxConnections = 1024
        /// Connections one user (uid) may hold on each stream socket, so that one user's processes cannot take
        /// them all.
        public var maxConnectionsPerUser = 256
        /// How long a control connection with every request answered may wait before sending the next one.
        public var controlIdleTimeout: Duration = .seconds(30)
    }

    public struct Intake: Sendable {
        /// Crash claims a user regains per second (`intake.crash_budget.per_second`); root's are not counted.
        public var crashBudgetPerSecond = 10.0
        /// Crash claims a user may make at once (`intake.crash_budget.burst`).
        public var crashBudgetBurst = 100
    }

    /// One receiver of `upload.url`, with the credentials and TLS settings it uses.
    public struct Endpoint: Sendable {
        public var url: String
        /// Its own `auth` section, when its entry in `upload.url` names one; the top-level `auth` otherwise.
        public var auth: Auth?
        /// Its own `tls` section, when its entry in `upload.url` names one; the top-level `tls` otherwise.
        public var tls: TLS?

        public init(url: String, auth: Auth? = nil, tls: TLS? = nil) {
            self.url = url
            self.auth = auth
            self.tls = tls
        }

        /// How it is named where others can read it (status, metrics labels, the log): its URL without user
        /// information, query or fragment, which may hold credentials (`?api_key=`, `user:password@`).
        var shownName: String {
            guard var components = URLComponents(string: url) else { return url }
            components.user = nil
            components.password = nil
            components.query = nil
            components.fragment = nil
            return components.string ?? url
        }
    }

    public struct Upload: Sendable {
        /// Where batches go, in order of preference (`upload.url`: one URL, or a list): delivery moves to the next
        /// while one fails, and back once a preferred one answers. No default: a configuration must say it (a file
        /// that lost it while being written must not send records to a default).
        public var endpoints: [Endpoint] = []
        /// The preferred endpoint's URL; setting it makes that URL the only endpoint.
        public var url: String {
            get { endpoints.first?.url ?? "" }
            set { endpoints = [Endpoint(url: newValue)] }
        }
        public var format = UploadFormat.ndjson
        /// How request bodies are compressed (`upload.compression`, `upload.compression_level`).
        public var compression = UploadCompression.none
        public var maxInFlight = 2
        public var timeout: Duration = .seconds(10)
        public var headers: [(String, String)] = []
        /// First retry delay after a failed request; doubles per consecutive failure.
        public var retryInitial: Duration = .milliseconds(500)
        /// The longest retry delay.
        public var retryMax: Duration = .seconds(30)
        /// The longest pause a remote's `Retry-After` may ask for; longer requests are cut to this.
        public var retryAfterMax: Duration = .seconds(300)
        /// How long requests in flight may take to finish after SIGTERM.
        public var shutdownTimeout: Duration = .seconds(10)
        /// What the link may carry (`upload.rate.*`); no limit by default.
        public var rate = UploadRateBudget()
    }

    public struct Auth: Sendable {
        /// A file holding the bearer token sent as `Authorization: Bearer …`; empty sends none.
        public var bearerTokenFile = ""
        /// A user for `Authorization: Basic …`, with the password in `basicPasswordFile`.
        public var basicUser = ""
        public var basicPasswordFile = ""

        /// Whether requests carry an `Authorization` header from this section.
        public var sendsCredentials: Bool { !bearerTokenFile.isEmpty || !basicUser.isEmpty }
    }

    public struct TLS: Sendable {
        /// PEM certificates to trust instead of the system's store.
        public var caFile = ""
        /// PEM client certificate and key, for mutual TLS.
        public var clientCert = ""
        public var clientKey = ""
        /// The name expected in the server's certificate (and sent as SNI) when the URL names another host.
        public var serverName = ""
        /// `1.2` or `1.3`.
        public var minVersion = "1.2"
        /// Accept any server certificate: only for trying things out; warned about at every start.
        public var insecureSkipVerify = false
    }

    public struct Batch: Sendable {
        public var maxRecords = 1000
        public var maxBytes = 1_048_576
    }

    public struct Spool: Sendable {
        /// `memory`, or the path of the durable spool.
        public var path = "/var/lib/logshipd/spool.db"
        public var maxBytes = 1_073_741_824
        /// Disk space the durable spool leaves free; past it, records are evicted as if the budget were reached.
        public var minFreeDisk = 64 << 20
        /// Lines of records the durable spool keeps in memory for delivery to claim without reading them back
        /// (`spool.max_cache_bytes`; ``SQLiteSpool/defaultCacheBytes``).
        public var maxCacheBytes = SQLiteSpool.defaultCacheBytes
    }

    public struct Journal: Sendable {
        public var enabled = false
        /// Journal files to read instead of the local journal; empty reads the local journal.
        public var directory = ""
        /// Where the first start reads from; afterwards the cursor saved in the spool decides.
        public var startAt = JournalStartPosition.tail
        /// Units to ship; empty ships all.
        public var units: [String] = []
        /// Units never shipped; logshipd's own by default, so that it cannot feed itself.
        public var excludeUnits = ["logshipd.service"]
        /// The least important severity shipped.
        public var minPriority = Severity.debug
        /// Raw `FIELD=value` matches.
        public var matches: [String] = []
        /// Extra journal fields carried into the record's fields.
        public var fields: [String] = []
        /// The most bytes read of one field (the message included).
        public var maxFieldBytes = 65_536
    }

    public struct Metrics: Sendable {
        /// `host:port` to serve Prometheus metrics on (`127.0.0.1:9464`); empty serves none.
        public var listen = ""
        /// Scrapes served at once; more connections are closed at once.
        public var maxConnections = 16
        /// How long a metrics connection may stay silent before it is closed.
        public var idleTimeout: Duration = .seconds(30)
    }

    public var ingest = Ingest()
    public var intake = Intake()
    public var metrics = Metrics()
    public var upload = Upload()
    public var auth = Auth()
    public var tls = TLS()
    public var batch = Batch()
    public var spool = Spool()
    public var journal = Journal()
    /// The daemon's own log level.
    public var logLevel = Logger.Level.info
    /// The host name stamped on records; the system's when empty.
    public var hostname = ""
    /// What an operator should know of a valid configuration (a key whose meaning changed, a `LOGSHIPD_` variable
    /// that names no key), each a line naming it: logged as warnings at start, printed by `--check-config`.
    public var notices: [String] = []

    public init() {}

    /// The credentials `endpoint` uses: its own, or the top-level ones.
    public func auth(of endpoint: Endpoint) -> Auth { endpoint.auth ?? auth }

    /// The TLS settings `endpoint` uses: its own, or the top-level ones.
    public func tls(of endpoint: Endpoint) -> TLS { endpoint.tls ?? tls }
}
