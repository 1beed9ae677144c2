import Configuration
import Foundation
import Logging
import Yams

/// Reads ``DaemonConfiguration`` from a YAML file with `LOGSHIPD_*` environment overrides.
///
/// Values come through swift-configuration: the environment (`LOGSHIPD_` + the key path in upper case, dots as
/// underscores) wins over the file, the file over the defaults. The file is walked with Yams, which rejects keys
/// that do not exist and reads what swift-configuration cannot (lists, headers, the entries of `upload.url`), and
/// its single values are handed to swift-configuration from there. Every value is read as text and parsed here,
/// so a bad value stops start-up with its key named instead of falling back to a default.
public struct ConfigurationLoader: Sendable {
    /// The keys a file may hold; any other stops start-up with its name.
    static let knownKeys: Set<String> = [
        "ingest.stream", "ingest.datagram", "ingest.control", "ingest.socket_mode", "ingest.max_record_bytes",
        "ingest.max_connections", "ingest.max_connections_per_user", "ingest.max_connections_per_process",
        "ingest.control_idle_timeout", "metrics.max_connections", "metrics.idle_timeout",
        "intake.crash_budget.per_second", "intake.crash_budget.burst",
        "upload.url", "upload.format", "upload.max_in_flight", "upload.timeout", "upload.headers",
        "upload.retry_initial", "upload.retry_max", "upload.retry_after_max", "upload.shutdown_timeout",
        "upload.rate.bytes_per_second", "upload.rate.requests_per_second", "upload.rate.burst_seconds",
        "upload.rate.min_bytes_per_second", "upload.rate.exempt", "batch.max_records", "batch.max_bytes",
        "spool.path", "spool.max_bytes", "spool.min_free_disk", "spool.max_cache_bytes",
        "journal.enabled", "journal.directory", "journal.start_at", "journal.units", "journal.exclude_units",
        "journal.min_priority", "journal.matches", "journal.fields", "journal.max_field_bytes",
        "auth.bearer_token_file", "auth.basic_user", "auth.basic_password_file", "metrics.listen",
        "upload.compression", "upload.compression_level", "tls.ca_file", "tls.client_cert", "tls.client_key",
        "tls.server_name", "tls.min_version",
        "tls.insecure_skip_verify",
        "log.level", "host.name",
    ]

    /// Keys whose value is a list: a YAML sequence in the file, comma-separated text in the environment.
    static let listKeys: Set<String> = [
        "journal.units", "journal.exclude_units", "journal.matches", "journal.fields", "upload.rate.exempt",
    ]

    /// What the file holds: its single values, and what swift-configuration cannot enumerate or read.
    struct FileValues {
        /// Each single value by its dotted key path, as the file writes it: what the reader reads from the file.
        var scalars: [String: String] = [:]
        /// `upload.url` written as a list.
        var endpoints: [EndpointEntry]?
        var headers: [(String, String)] = []
        var lists: [String: [String]] = [:]
        /// Unknown keys and values of the wrong shape, each a line naming the key.
        var problems: [String] = []
    }

    private let environment: [String: String]

    /// - Parameter environment: The variables to read overrides from; the process environment by default.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads the configuration.
    ///
    /// - Parameters:
    ///   - path: The YAML file; `nil` reads only defaults and environment.
    /// - Throws: ``ConfigurationError`` naming the file, or listing every key at fault.
    public func load(path: String?) async throws -> DaemonConfiguration {
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "logshipd")
        ]
        var fileValues = FileValues()
        if let path {
            let text: String
            do {
                // FileHandle, not String(contentsOfFile:): it also reads /dev/null and pipes ("--config /dev/null").
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
                defer { try? handle.close() }
                text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            } catch {
                throw ConfigurationError("cannot read \(path): \(Self.reason(error))")
            }
            // A file of comments only holds no document; it means "all defaults". The file's values are handed
            // over as they were read here: swift-configuration's own YAML reader refuses a list of mappings (the
            // entries of `upload.url`).
            if let values = try Self.validate(yaml: text, path: path) {
                fileValues = values
                let scalars = values.scalars.map { key, text in
                    let components = key.split(separator: ".").map(String.init)
                    return (AbsoluteConfigKey(components), ConfigValue(.string(text), isSecret: false))
                }
                providers.append(InMemoryProvider(name: path, values: Dictionary(uniqueKeysWithValues: scalars)))
            }
        }
        var configuration = try Self.read(
            ConfigReader(providers: providers), file: fileValues, environment: environment)
        configuration.notices += Self.unknownVariables(in: environment)
        return configuration
    }

    /// The system's words for a file error: "No such file or directory", "Is a directory".
    private static func reason(_ error: any Error) -> String {
        let error = error as NSError
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return SystemError.describe(Int32(underlying.code))
        }
        if error.domain == NSCocoaErrorDomain && error.code == NSFileReadNoSuchFileError {
            return SystemError.describe(ENOENT)
        }
        return error.localizedFailureReason ?? error.localizedDescription
    }

    /// Checks that every key in the file is known and every value a scalar (`upload.headers` a mapping of them).
    ///
    /// - Returns: The headers from `upload.headers` and the lists, which swift-configuration cannot enumerate, and
    ///   the problems found with keys; `nil` when the file holds no document at all.
    /// - Throws: When the file is not YAML or not a mapping of sections.
    static func validate(yaml: String, path: String) throws -> FileValues? {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigurationError("\(path) is not valid YAML: \(error)")
        }
        guard let root else { return nil }
        guard let mapping = root.mapping else { throw ConfigurationError("\(path): the top level must be a mapping") }

        var values = FileValues()
        for (sectionNode, sectionValue) in mapping {
            let section = sectionNode.string ?? "\(sectionNode)"
            guard let entries = sectionValue.mapping else {
                if isNoValue(sectionValue) { continue }
                values.problems.append("\(path): \(section) must be a mapping of keys")
                continue
            }
            for (key, value) in Self.flattened(entries, under: section) {
                do {
                    guard knownKeys.contains(key) else {
                        throw ConfigurationError(
                            "\(path): unknown key \(key)" + suggestion(for: key, among: knownKeys))
                    }
                    if key == "upload.headers" {
                        values.headers = try readHeaders(value, path: path)
                    } else if key == "upload.url", let sequence = value.sequence {
                        let (entries, problems) = readEndpointEntries(sequence, path: path)
                        values.endpoints = entries
                        values.problems += problems
                    } else if listKeys.contains(key) {
                        values.lists[key] = try readList(value, key: key, path: path)
                        if let scalar = value.scalar { values.scalars[key] = scalar.string }
                    } else if let scalar = value.scalar {
                        values.scalars[key] = scalar.string
                    } else {
                        throw ConfigurationError(
                            "\(path): \(key) must be a single value" + (key == "upload.url" ? " or a list" : ""))
                    }
                } catch let error as ConfigurationError {
                    values.problems += error.problems
                }
            }
        }
        return values
    }

    /// The entries of a section with their dotted key paths; a mapping under a key that takes no mapping of its
    /// own (`intake: {crash_budget: {burst: 5}}`) stands for the keys below it.
    private static func flattened(_ entries: Node.Mapping, under prefix: String) -> [(String, Node)] {
        entries.flatMap { keyNode, value -> [(String, Node)] in
            let key = "\(prefix).\(keyNode.string ?? "\(keyNode)")"
            if let nested = value.mapping, key != "upload.headers", !knownKeys.contains(key) {
                return flattened(nested, under: key)
            }
            return [(key, value)]
        }
    }

    /// Whether a key was written with no value (`key:` or `key: ~`).
    static func isNoValue(_ node: Node) -> Bool {
        guard let scalar = node.scalar else { return false }
        return scalar.string.isEmpty || scalar.string == "~"
    }

    /// A sequence of scalars, or one scalar holding a comma-separated list.
    private static func readList(_ node: Node, key: String, path: String) throws -> [String] {
        if let scalar = node.scalar {
            return ValueParser.list.parse(scalar.string) ?? []
        }
        guard let sequence = node.sequence else {
            throw ConfigurationError("\(path): \(key) must be a list of values")
        }
        return try sequence.map { item in
            guard let text = item.scalar?.string else {
                throw ConfigurationError("\(path): \(key) must be a list of values")
            }
            return text
        }
    }

    private static func readHeaders(_ node: Node, path: String) throws -> [(String, String)] {
        if isNoValue(node) { return [] }
        guard let mapping = node.mapping else {
            throw ConfigurationError("\(path): upload.headers must be a mapping of header names to values")
        }
        return try mapping.map { name, value in
            guard let name = name.string, let value = value.scalar?.string else {
                throw ConfigurationError("\(path): upload.headers entries must be name: value")
            }
            return (name, value)
        }
    }

    /// Reads every key, collecting what is wrong with each, and throws them all together.
    private static func read(
        _ reader: ConfigReader, file: FileValues, environment: [String: String]
    ) throws -> DaemonConfiguration {
        var values = ConfigValues(reader: reader, environment: environment)
        var configuration = DaemonConfiguration()

        values.read("ingest.stream", into: &configuration.ingest.stream, .text)
        values.read("ingest.datagram", into: &configuration.ingest.datagram, .text)
        values.read("ingest.control", into: &configuration.ingest.control, .nonEmptyText)
        values.read("ingest.socket_mode", into: &configuration.ingest.socketMode, .fileMode)
        // Half the control socket's request limit: one record must fit in one `logctl send` request.
        values.read(
            "ingest.max_record_bytes", into: &configuration.ingest.maxRecordBytes,
            .byteCount(256...(ControlProtocol.maximumRequestBytes / 2)))
        values.read("ingest.max_connections", into: &configuration.ingest.maxConnections, .integer(1...100_000))
        // The name of earlier versions, when the cap was counted per process; the per-user key wins.
        values.read(
            "ingest.max_connections_per_process", into: &configuration.ingest.maxConnectionsPerUser,
            .integer(1...100_000))
        if reader.string(forKey: ConfigKey("ingest.max_connections_per_process")) != nil {
            configuration.notices.append(
                "ingest.max_connections_per_process is read as ingest.max_connections_per_user: "
                    + "connections are now capped per user (uid), not per process; rename the key")
        }
        values.read(
            "ingest.max_connections_per_user", into: &configuration.ingest.maxConnectionsPerUser, .integer(1...100_000))
        values.read(
            "ingest.control_idle_timeout", into: &configuration.ingest.controlIdleTimeout,
            .duration(minimum: .milliseconds(100)))

        values.read(
            "intake.crash_budget.per_second", into: &configuration.intake.crashBudgetPerSecond, .number(0...1_000_000))
        values.read("intake.crash_budget.burst", into: &configuration.intake.crashBudgetBurst, .integer(0...1_000_000))

        configuration.upload.endpoints = readEndpoints(&values, file: file.endpoints)
        values.read("upload.format", into: &configuration.upload.format, .format)
        var compression = "none", level: Int?
        values.read("upload.compression", into: &compression, .oneOf(UploadCompression.names))
        values.read("upload.compression_level", into: &level, .compressionLevel(of: compression))
        configuration.upload.compression = UploadCompression(name: compression, level: level) ?? .none
        values.read("upload.max_in_flight", into: &configuration.upload.maxInFlight, .integer(1...64))
        values.read("upload.timeout", into: &configuration.upload.timeout, .duration())
        values.read("upload.retry_initial", into: &configuration.upload.retryInitial, .duration())
        values.read("upload.retry_max", into: &configuration.upload.retryMax, .duration())
        values.read("upload.retry_after_max", into: &configuration.upload.retryAfterMax, .duration())
        values.read("upload.shutdown_timeout", into: &configuration.upload.shutdownTimeout, .duration())
        configuration.upload.headers = file.headers
        values.read("upload.headers", into: &configuration.upload.headers, .headerList)
        values.readUploadRate(into: &configuration.upload.rate, exempt: file.lists["upload.rate.exempt"])

        values.read("auth.bearer_token_file", into: &configuration.auth.bearerTokenFile, .text)
        values.read("auth.basic_user", into: &configuration.auth.basicUser, .text)
        values.read("auth.basic_password_file", into: &configuration.auth.basicPasswordFile, .text)
        values.read("tls.ca_file", into: &configuration.tls.caFile, .text)
        values.read("tls.client_cert", into: &configuration.tls.clientCert, .text)
        values.read("tls.client_key", into: &configuration.tls.clientKey, .text)
        values.read("tls.server_name", into: &configuration.tls.serverName, .text)
        values.read("tls.min_version", into: &configuration.tls.minVersion, .oneOf(["1.2", "1.3"]))
        values.read("tls.insecure_skip_verify", into: &configuration.tls.insecureSkipVerify, .boolean)
        values.read("metrics.listen", into: &configuration.metrics.listen, .listenAddress)
        values.read("metrics.max_connections", into: &configuration.metrics.maxConnections, .integer(1...1024))
        values.read(
            "metrics.idle_timeout", into: &configuration.metrics.idleTimeout, .duration(minimum: .milliseconds(100)))

        values.read("batch.max_records", into: &configuration.batch.maxRecords, .integer(1...1_000_000))
        values.read("batch.max_bytes", into: &configuration.batch.maxBytes, .byteCount(1024...(64 << 20)))

        values.read("spool.path", into: &configuration.spool.path, .nonEmptyText)
        // Up to a petabyte: far beyond any disk here, far inside what the room arithmetic can add up.
        values.read("spool.max_bytes", into: &configuration.spool.maxBytes, .byteCount(65_536...(1 << 50)))
        values.read("spool.min_free_disk", into: &configuration.spool.minFreeDisk, .byteCount(0...(1 << 50)))
        values.read("spool.max_cache_bytes", into: &configuration.spool.maxCacheBytes, .byteCount(0...(1 << 30)))

        values.read("journal.enabled", into: &configuration.journal.enabled, .boolean)
        values.read("journal.directory", into: &configuration.journal.directory, .text)
        values.read("journal.start_at", into: &configuration.journal.startAt, .journalStart)
        values.read("journal.min_priority", into: &configuration.journal.minPriority, .severity)
        values.read("journal.max_field_bytes", into: &configuration.journal.maxFieldBytes, .byteCount(256...(16 << 20)))
        for (key, keyPath) in [
            ("journal.units", \DaemonConfiguration.Journal.units),
            ("journal.exclude_units", \.excludeUnits),
        ] {
            if let list = file.lists[key] { configuration.journal[keyPath: keyPath] = list }
            values.read(key, into: &configuration.journal[keyPath: keyPath], .list)
        }
        if let matches = file.lists["journal.matches"] { configuration.journal.matches = matches }
        values.read("journal.matches", into: &configuration.journal.matches, .list)
        if let fields = file.lists["journal.fields"] { configuration.journal.fields = fields }
        values.read("journal.fields", into: &configuration.journal.fields, .list)
        values.problems += journalNameProblems(configuration.journal)
        values.read("log.level", into: &configuration.logLevel, .logLevel)
        values.read("host.name", into: &configuration.hostname, .text)

        var problems = file.problems + values.problems
        // Rules across keys mean little while single keys are wrong.
        if problems.isEmpty { problems = crossKeyProblems(configuration) }
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        configuration.notices += endpointNotices(configuration)
        return configuration
    }
}

/// Reads keys as text and parses them, noting each key whose text is bad and leaving its default.
struct ConfigValues {
    /// Keys whose text may hold a credential (`Authorization: …`, `https://user:password@…`): a bad value is not
    /// repeated in the message, which goes to the log and to `--check-config`'s output.
    static let mayHoldCredentials: Set<String> = ["upload.headers", "upload.url"]

    let reader: ConfigReader
    let environment: [String: String]
    var problems: [String] = []

    mutating func read<Value>(_ key: String, into value: inout Value, _ parser: ValueParser<Value>) {
        let text = reader.string(forKey: ConfigKey(key))
        let mayHoldCredentials = Self.mayHoldCredentials.contains(key)
        parse(text, parser, into: &value, named: source(of: key), mayHoldCredentials: mayHoldCredentials)
    }

    /// Parses `text` into `value`, or notes a problem naming `name` and leaves `value`; nothing when `text` is `nil`.
    /// - Parameter mayHoldCredentials: Whether a bad text is left out of the problem.
    mutating func parse<Value>(
        _ text: String?, _ parser: ValueParser<Value>, into value: inout Value, named name: String,
        mayHoldCredentials: Bool = false
    ) {
        guard let text else { return }
        guard let parsed = parser.parse(text) else {
            let shown = mayHoldCredentials ? "(not shown: it may hold a credential)" : "\"\(text)\""
            problems.append("\(name): invalid value \(shown) (expected \(parser.expected))")
            return
        }
        value = parsed
    }

    /// How a problem names `key`: with its environment variable when that is set, since the environment wins over
    /// the file and a variable that is set is where a bad value came from.
    func source(of key: String) -> String {
        let variable = ConfigurationLoader.variable(for: key)
        return environment[variable] != nil ? "\(variable) (\(key))" : key
    }
}
