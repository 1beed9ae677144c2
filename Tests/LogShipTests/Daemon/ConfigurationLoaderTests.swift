import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

@Suite("Configuration")
struct ConfigurationLoaderTests {
    /// Loads `yaml` with `environment`, which names an upload URL unless the test gives one (there is no default).
    func load(_ yaml: String?, environment: [String: String] = [:]) async throws -> DaemonConfiguration {
        var path: String?
        if let yaml {
            let directory = try TemporaryDirectory.make()
            path = "\(directory)/logshipd.yaml"
            try yaml.write(toFile: path!, atomically: true, encoding: .utf8)
        }
        var environment = environment
        if !(yaml ?? "").contains("url:") && environment["LOGSHIPD_UPLOAD_URL"] == nil {
            environment["LOGSHIPD_UPLOAD_URL"] = "http://127.0.0.1:8514/ingest"
        }
        return try await ConfigurationLoader(environment: environment).load(path: path)
    }

    func loadError(_ yaml: String, environment: [String: String] = [:]) async -> String {
        do {
            _ = try await load(yaml, environment: environment)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test("the documented config file is valid and matches the contract's defaults")
    func documentedFile() async throws {
        let path = packageRoot.appendingPathComponent("config/logshipd.yaml").path
        let configuration = try await ConfigurationLoader(environment: [:]).load(path: path)
        #expect(configuration.ingest.stream == "/run/logshipd/ingest.sock")
        #expect(configuration.ingest.datagram == "/run/logshipd/ingest.dgram")
        #expect(configuration.ingest.control == "/run/logshipd/control.sock")
        #expect(configuration.ingest.socketMode == 0o660)
        #expect(configuration.ingest.maxRecordBytes == 65_536)
        #expect(configuration.upload.url == "http://127.0.0.1:8514/ingest")
        #expect(configuration.upload.maxInFlight == 2)
        #expect(configuration.upload.timeout == .seconds(10))
        #expect(configuration.upload.retryAfterMax == .seconds(300))
        #expect(configuration.ingest.maxConnections == 1024)
        #expect(configuration.batch.maxRecords == 1000)
        #expect(configuration.batch.maxBytes == 1_048_576)
        #expect(configuration.spool.maxBytes == 1_073_741_824)
        #expect(configuration.spool.maxCacheBytes == SQLiteSpool.defaultCacheBytes)
    }

    @Test("""
        spool.max_cache_bytes: a size from the file or the environment, from 0 to 1 GiB; the documented budget by \
        default
        """)
    func cacheBudget() async throws {
        #expect(try await load(nil).spool.maxCacheBytes == 4 << 20)
        #expect(try await load("spool:\n  max_cache_bytes: 512KiB\n").spool.maxCacheBytes == 512 << 10)
        let overridden = try await load(
            "spool:\n  max_cache_bytes: 512KiB\n", environment: ["LOGSHIPD_SPOOL_MAX_CACHE_BYTES": "0"])
        #expect(overridden.spool.maxCacheBytes == 0, "0 keeps only the lines in use")
        #expect(try await load("spool:\n  max_cache_bytes: 1GiB\n").spool.maxCacheBytes == 1 << 30)
        var changed = DaemonConfiguration()
        changed.spool.maxCacheBytes = 1 << 20
        #expect(
            LiveConfiguration.restartOnlyChanges(from: DaemonConfiguration(), to: changed) == ["spool.max_cache_bytes"])
    }

    @Test("the crash budget's nested keys come from the file and the environment; an unknown nested key is named")
    func crashBudget() async throws {
        let configuration = try await load(
            "intake:\n  crash_budget:\n    per_second: 0.5\n    burst: 7\n",
            environment: ["LOGSHIPD_INTAKE_CRASH_BUDGET_BURST": "3"])
        #expect(configuration.intake.crashBudgetPerSecond == 0.5 && configuration.intake.crashBudgetBurst == 3)
        let defaults = try await load(nil)
        #expect(defaults.intake.crashBudgetPerSecond == 10 && defaults.intake.crashBudgetBurst == 100)
        #expect(
            await loadError("intake:\n  crash_budget:\n    per_minute: 1\n")
                .contains("unknown key intake.crash_budget.per_minute"))
        #expect(
            await loadError("intake:\n  crash_budget:\n    per_second: -1\n")
                .contains("intake.crash_budget.per_second: invalid value"))
    }

    @Test("the per-process connection cap of earlier versions is read as the per-user one, with a note saying so")
    func perProcessCap() async throws {
        let old = try await load("ingest:\n  max_connections_per_process: 12\n")
        #expect(old.ingest.maxConnectionsPerUser == 12)
        #expect(old.notices.count == 1 && old.notices[0].contains("capped per user (uid), not per process"))
        let both = try await load("ingest:\n  max_connections_per_process: 12\n  max_connections_per_user: 20\n")
        #expect(both.ingest.maxConnectionsPerUser == 20, "the per-user key wins")
        #expect(try await load(nil).notices.isEmpty)
    }

    @Test("environment variables override the file")
    func environmentOverrides() async throws {
        let configuration = try await load(
            "upload:\n  url: http://file:1/x\n  max_in_flight: 3\nspool:\n  path: memory\n",
            environment: [
                "LOGSHIPD_UPLOAD_URL": "http://env:2/y",
                "LOGSHIPD_BATCH_MAX_RECORDS": "7",
                "LOGSHIPD_UPLOAD_HEADERS": "Authorization: Bearer t; X-Env: 1",
            ])
        #expect(configuration.upload.url == "http://env:2/y")
        #expect(configuration.upload.maxInFlight == 3)
        #expect(configuration.batch.maxRecords == 7)
        #expect(configuration.upload.headers.map { "\($0.0)=\($0.1)" } == ["Authorization=Bearer t", "X-Env=1"])
    }

    @Test("headers, durations, sizes and modes are read from the file")
    func valueForms() async throws {
        let configuration = try await load(
            """
            ingest:
              socket_mode: "0600"
              max_record_bytes: 128KiB
            upload:
              timeout: 1500ms
              headers:
                X-Token: abc
            spool:
              path: memory
              max_bytes: 2MiB
            """)
        #expect(configuration.ingest.socketMode == 0o600)
        #expect(configuration.ingest.maxRecordBytes == 131_072)
        #expect(configuration.upload.timeout == .milliseconds(1500))
        #expect(configuration.upload.headers.map { "\($0.0)=\($0.1)" } == ["X-Token=abc"])
        #expect(configuration.spool.maxBytes == 2 << 20)
    }

    @Test("upload.compression and its level: each compression's default, a level from the file or the environment")
    func compression() async throws {
        #expect(try await load(nil).upload.compression == .none)
        #expect(try await load("upload:\n  compression: gzip\n").upload.compression == .gzip(level: 6))
        #expect(try await load("upload:\n  compression: zstd\n").upload.compression == .zstd(level: 3))
        let configured = try await load(
            "upload:\n  compression: zstd\n  compression_level: 19\n",
            environment: ["LOGSHIPD_UPLOAD_COMPRESSION_LEVEL": "7"])
        #expect(configured.upload.compression == .zstd(level: 7))
    }

    @Test("unknown keys and bad values stop start-up with the key named", arguments: [
        ("uplod:\n  url: x\n", "unknown key uplod.url"),
        ("upload:\n  timeout: soon\n", "upload.timeout: invalid value \"soon\""),
        ("upload:\n  url: ftp://x/\n", "upload.url: invalid value"),
        // A credential in a bad URL is not repeated.
        ("upload:\n  url: ftp://user:s3cret@x/\n", "upload.url: invalid value (not shown: it may hold a credential)"),
        ("ingest:\n  socket_mode: \"0999\"\n", "ingest.socket_mode: invalid value"),
        ("batch:\n  max_records: [1, 2]\n", "batch.max_records must be a single value"),
        ("journal:\n  enabled: maybe\n", "journal.enabled: invalid value"),
        ("upload: [1]\n", "upload must be a mapping"),
        ("upload:\n  url: [unclosed\n", "not valid YAML"),
        // Values that once trapped: rounding to zero, overflowing a conversion, overflowing a product.
        ("upload:\n  retry_initial: 0.4ms\n",
            "upload.retry_initial: invalid value \"0.4ms\" (expected a duration from 1ms to 30d"),
        ("upload:\n  timeout: 1e300s\n", "upload.timeout: invalid value \"1e300s\""),
        ("upload:\n  retry_after_max: -5s\n", "upload.retry_after_max: invalid value"),
        ("upload:\n  shutdown_timeout: nan\n", "upload.shutdown_timeout: invalid value"),
        ("ingest:\n  max_record_bytes: 9223372036854775807\n", "ingest.max_record_bytes: invalid value"),
        ("spool:\n  max_bytes: 9999999999999G\n", "spool.max_bytes: invalid value"),
        ("spool:\n  max_cache_bytes: 2GiB\n",
            "spool.max_cache_bytes: invalid value \"2GiB\" (expected a size from 0 to 1GiB"),
        ("spool:\n  max_cache_bytes: lots\n", "spool.max_cache_bytes: invalid value \"lots\""),
        ("spool:\n  max_cache_bytes: -1\n", "spool.max_cache_bytes: invalid value \"-1\""),
        ("ingest:\n  max_connections: 0\n",
            "ingest.max_connections: invalid value \"0\" (expected a whole number from 1"),
        ("ingest:\n  max_record_bytes: 512KiB\nspool:\n  max_bytes: 1MiB\n",
            "spool.max_bytes (1MiB) must hold at least four records of ingest.max_record_bytes (512KiB): "
                + "at least 2MiB"),
        ("ingest:\n  max_record_bytes: 1MiB\n",
            "ingest.max_record_bytes: invalid value \"1MiB\" (expected a size from 256 to 512KiB"),
        ("upload:\n  retry_initial: 2s\n  retry_max: 1s\n",
            "upload.retry_max (1s) must not be shorter than upload.retry_initial (2s)"),
        ("journal:\n  matches: [nope]\n", "journal.matches: invalid match \"nope\""),
        ("journal:\n  matches: [\"lower=x\"]\n", "journal.matches: invalid match \"lower=x\""),
        ("journal:\n  fields: [\"1ABC\"]\n", "journal.fields: invalid field name"),
        ("journal:\n  start_at: middle\n", "journal.start_at: invalid value \"middle\" (expected head or tail)"),
        ("journal:\n  min_priority: loud\n", "journal.min_priority: invalid value"),
        ("journal:\n  units: {a: b}\n", "journal.units must be a list of values"),
        ("upload:\n  compression: brotli\n",
            "upload.compression: invalid value \"brotli\" (expected one of none, gzip, zstd)"),
        ("upload:\n  compression: gzip\n  compression_level: 10\n",
            "upload.compression_level: invalid value \"10\" (expected a gzip level from 1 to 9)"),
        ("upload:\n  compression: zstd\n  compression_level: 0\n",
            "upload.compression_level: invalid value \"0\" (expected a zstd level from 1 to 19)"),
        ("upload:\n  compression_level: 3\n",
            "upload.compression_level: invalid value \"3\" (expected no level, since upload.compression is none)"),
    ])
    func rejects(yaml: String, message: String) async {
        let error = await loadError(yaml)
        #expect(error.contains(message), "\(error)")
    }

    @Test("a bad value from the environment is named by its variable, one from the file by its key")
    func environmentNamed() async {
        let fromEnvironment = await loadError(
            "upload:\n  timeout: 5s\n", environment: ["LOGSHIPD_UPLOAD_TIMEOUT": "zzz"])
        #expect(
            fromEnvironment.contains("LOGSHIPD_UPLOAD_TIMEOUT (upload.timeout): invalid value \"zzz\""),
            "\(fromEnvironment)")
        let fromFile = await loadError("upload:\n  timeout: zzz\n")
        #expect(
            fromFile.contains("upload.timeout: invalid value \"zzz\"") && !fromFile.contains("LOGSHIPD_"),
            "\(fromFile)")
    }

    @Test("a user or password in upload.url is refused without being shown, from the file or the environment")
    func credentialsInURL() async {
        for url in ["https://user:s3cret@logs.example/ingest", "http://s3cret@logs.example/"] {
            let fromFile = await loadError("upload:\n  url: \(url)\n")
            let fromEnvironment = await loadError("", environment: ["LOGSHIPD_UPLOAD_URL": url])
            for error in [fromFile, fromEnvironment] {
                #expect(error.contains("upload.url holds a user or password (not shown)"), "\(error)")
                #expect(error.contains("auth.basic_password_file") && !error.contains("s3cret"), "\(error)")
            }
        }
    }

    @Test("journal keys: lists from the file or, comma-separated, from the environment")
    func journalKeys() async throws {
        let configuration = try await load(
            """
            journal:
              enabled: true
              directory: /var/log/journal/remote
              start_at: head
              units: [nginx.service, postgresql.service]
              min_priority: warning
              matches:
                - _TRANSPORT=journal
              fields: [REQUEST_ID]
              max_field_bytes: 128KiB
            spool:
              path: memory
            """, environment: ["LOGSHIPD_JOURNAL_EXCLUDE_UNITS": "cron.service, logshipd.service"])
        let journal = configuration.journal
        #expect(journal.enabled && journal.directory == "/var/log/journal/remote" && journal.startAt == .head)
        #expect(journal.units == ["nginx.service", "postgresql.service"])
        #expect(journal.excludeUnits == ["cron.service", "logshipd.service"])
        #expect(journal.minPriority == .warning && journal.matches == ["_TRANSPORT=journal"])
        #expect(journal.fields == ["REQUEST_ID"] && journal.maxFieldBytes == 131_072)
        let defaults = try await load("spool:\n  path: memory\n")
        #expect(defaults.journal.excludeUnits == ["logshipd.service"] && defaults.journal.startAt == .tail)
    }

    @Test("a file of comments only means all defaults")
    func emptyFile() async throws {
        let configuration = try await load("# nothing here\n", environment: ["LOGSHIPD_SPOOL_PATH": "memory"])
        #expect(configuration.upload.maxInFlight == 2)
    }

    @Test("a new upload URL host and tls.server_name follow a reload; the host is reached under the server name")
    func serverNameFollowsReload() throws {
        var old = DaemonConfiguration()
        old.upload.url = "https://10.0.0.1:443/ingest"
        var new = old
        new.upload.url = "https://10.0.0.2:443/ingest"
        new.tls.serverName = "logs.internal"
        #expect(LiveConfiguration.restartOnlyChanges(from: old, to: new).isEmpty)
        let upload = try #require(try LiveConfiguration.uploadConfigurations(new).first)
        #expect(upload.url == "https://logs.internal:443/ingest" && upload.connectHost == "10.0.0.2")
    }
}
