import Foundation

/// The rules a configuration must keep beyond each key's own: across keys, and the journal's names.
extension ConfigurationLoader {
    /// Rules that involve more than one key, and files the keys name.
    static func crossKeyProblems(_ configuration: DaemonConfiguration) -> [String] {
        var problems = endpointProblems(configuration.upload.endpoints)
        if configuration.upload.retryMax < configuration.upload.retryInitial {
            problems.append(
                "upload.retry_max (\(ConfigurationText.duration(configuration.upload.retryMax))) "
                    + "must not be shorter than upload.retry_initial "
                    + "(\(ConfigurationText.duration(configuration.upload.retryInitial)))")
        }
        // Division, not multiplication: no product of two configured values can overflow.
        if configuration.spool.maxBytes / 4 < configuration.ingest.maxRecordBytes {
            problems.append(
                "spool.max_bytes (\(ConfigurationText.bytes(configuration.spool.maxBytes))) must hold at least "
                    + "four records of ingest.max_record_bytes "
                    + "(\(ConfigurationText.bytes(configuration.ingest.maxRecordBytes))): "
                    + "at least \(ConfigurationText.bytes(configuration.ingest.maxRecordBytes * 4))")
        }
        problems += uploadRateProblems(configuration.upload.rate, maxRecordBytes: configuration.ingest.maxRecordBytes)
        problems += authProblems(configuration.auth)
        problems += tlsProblems(configuration.tls)
        if configuration.journal.enabled && configuration.spool.maxBytes / 4 < configuration.journal.maxFieldBytes {
            problems.append(
                "spool.max_bytes (\(ConfigurationText.bytes(configuration.spool.maxBytes))) must hold at least "
                    + "four journal fields of journal.max_field_bytes "
                    + "(\(ConfigurationText.bytes(configuration.journal.maxFieldBytes))): "
                    + "at least \(ConfigurationText.bytes(configuration.journal.maxFieldBytes * 4))")
        }
        return problems
    }

    /// The rules of an `auth` section: the top-level one, or an endpoint's own.
    static func authProblems(_ auth: DaemonConfiguration.Auth) -> [String] {
        var problems: [String] = []
        if auth.basicUser.isEmpty != auth.basicPasswordFile.isEmpty {
            problems.append("auth.basic_user and auth.basic_password_file go together")
        }
        if !auth.basicUser.isEmpty && !auth.bearerTokenFile.isEmpty {
            problems.append("auth.bearer_token_file and auth.basic_user exclude each other: one Authorization header")
        }
        return problems
    }

    /// The rules of a `tls` section (the top-level one, or an endpoint's own), and the files it names.
    static func tlsProblems(_ tls: DaemonConfiguration.TLS) -> [String] {
        guard tls.clientCert.isEmpty == tls.clientKey.isEmpty else {
            return ["tls.client_cert and tls.client_key go together"]
        }
        // Reading them now makes a missing or malformed file a configuration error, at start-up or on reload.
        do {
            _ = try TLSSettings.clientConfiguration(tls)
            return []
        } catch let error as ConfigurationError {
            return error.problems
        } catch {
            return ["tls: \(error)"]
        }
    }

    /// `journal.matches` must be `FIELD=value` and `journal.fields` field names, as journald writes them.
    static func journalNameProblems(_ journal: DaemonConfiguration.Journal) -> [String] {
        var problems: [String] = []
        for match in journal.matches {
            guard let equals = match.firstIndex(of: "="), isJournalFieldName(match[..<equals]) else {
                problems.append(
                    "journal.matches: invalid match \"\(match)\" "
                        + "(expected FIELD=value, such as _SYSTEMD_UNIT=nginx.service)")
                continue
            }
        }
        for field in journal.fields where !isJournalFieldName(field[...]) {
            problems.append(
                "journal.fields: invalid field name \"\(field)\" (expected upper-case letters, digits and _)")
        }
        return problems
    }

    /// Upper-case ASCII letters, digits and `_`, not starting with a digit (journald's rule).
    private static func isJournalFieldName(_ name: Substring) -> Bool {
        guard let first = name.first, !first.isNumber else { return false }
        return name.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}
