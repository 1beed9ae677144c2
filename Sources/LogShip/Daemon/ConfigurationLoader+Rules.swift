import Foundation

/// The rules a configuration must keep beyond each key's own: across keys, and the journal's names.
extension ConfigurationLoader {
    /// Rules that involve more than one key, and files the keys name.
    static func crossKeyProblems(_ configuration: DaemonConfiguration) -> [String] {
        var problems: [String] = []
        // A password in the URL would be in every log line and status that names the URL; the URL is not shown.
        if let url = URLComponents(string: configuration.upload.url), url.user != nil || url.password != nil {
            problems.append(
                "upload.url holds a user or password (not shown): put the user in auth.basic_user and the password in a file named by auth.basic_password_file")
        }
        if configuration.upload.retryMax < configuration.upload.retryInitial {
            problems.append(
                "upload.retry_max (\(ConfigurationText.duration(configuration.upload.retryMax))) must not be shorter than upload.retry_initial (\(ConfigurationText.duration(configuration.upload.retryInitial)))")
        }
        // Division, not multiplication: no product of two configured values can overflow.
        if configuration.spool.maxBytes / 4 < configuration.ingest.maxRecordBytes {
            problems.append(
                "spool.max_bytes (\(ConfigurationText.bytes(configuration.spool.maxBytes))) must hold at least four records of ingest.max_record_bytes (\(ConfigurationText.bytes(configuration.ingest.maxRecordBytes))): at least \(ConfigurationText.bytes(configuration.ingest.maxRecordBytes * 4))")
        }
        problems += uploadRateProblems(configuration.upload.rate, maxRecordBytes: configuration.ingest.maxRecordBytes)
        if configuration.auth.basicUser.isEmpty != configuration.auth.basicPasswordFile.isEmpty {
            problems.append("auth.basic_user and auth.basic_password_file go together")
        }
        if !configuration.auth.basicUser.isEmpty && !configuration.auth.bearerTokenFile.isEmpty {
            problems.append("auth.bearer_token_file and auth.basic_user exclude each other: one Authorization header")
        }
        if configuration.tls.clientCert.isEmpty != configuration.tls.clientKey.isEmpty {
            problems.append("tls.client_cert and tls.client_key go together")
        } else {
            // Reading them now makes a missing or malformed file a configuration error, at start-up or on reload.
            do {
                _ = try TLSSettings.clientConfiguration(configuration.tls)
            } catch let error as ConfigurationError {
                problems += error.problems
            } catch {
                problems.append("tls: \(error)")
            }
        }
        if configuration.journal.enabled && configuration.spool.maxBytes / 4 < configuration.journal.maxFieldBytes {
            problems.append(
                "spool.max_bytes (\(ConfigurationText.bytes(configuration.spool.maxBytes))) must hold at least four journal fields of journal.max_field_bytes (\(ConfigurationText.bytes(configuration.journal.maxFieldBytes))): at least \(ConfigurationText.bytes(configuration.journal.maxFieldBytes * 4))")
        }
        return problems
    }

    /// `journal.matches` must be `FIELD=value` and `journal.fields` field names, as journald writes them.
    static func journalNameProblems(_ journal: DaemonConfiguration.Journal) -> [String] {
        var problems: [String] = []
        for match in journal.matches {
            guard let equals = match.firstIndex(of: "="), isJournalFieldName(match[..<equals]) else {
                problems.append("journal.matches: invalid match \"\(match)\" (expected FIELD=value, such as _SYSTEMD_UNIT=nginx.service)")
                continue
            }
        }
        for field in journal.fields where !isJournalFieldName(field[...]) {
            problems.append("journal.fields: invalid field name \"\(field)\" (expected upper-case letters, digits and _)")
        }
        return problems
    }

    /// Upper-case ASCII letters, digits and `_`, not starting with a digit (journald's rule).
    private static func isJournalFieldName(_ name: Substring) -> Bool {
        guard let first = name.first, !first.isNumber else { return false }
        return name.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}
