import LogShipRecord

/// The field names of the journal export format: those logshipd writes, and the one a sender's field gets.
///
/// A journal name is upper case letters, digits and `_`, at most 64 bytes, not starting with a digit; one that
/// starts with `_` is journald's own, vouched for by the host, and only logshipd writes such names. A sender's key
/// is made a name (`syslog_identifier` as `SYSLOG_IDENTIFIER`, `exampleSDID@32473.iut` as `EXAMPLESDID_32473_IUT`,
/// leading `_` dropped). What the host vouches for always wins: a name logshipd writes, with or without journald's
/// leading `_` (`MESSAGE`, `PRIORITY`, `PID` for `_PID`), one in logshipd's `LOGSHIP_` namespace, or one starting
/// with the prefix itself becomes `FIELD_<NAME>`; so does a name that would be empty or start with a digit.
package enum JournalFieldNames {
    /// The names logshipd writes from a record's own parts, besides those in ``namespace``.
    package static let written: Set<String> = [
        "__REALTIME_TIMESTAMP", "MESSAGE", "PRIORITY", "_HOSTNAME", "_PID", "_UID", "_GID", "_COMM", "_SYSTEMD_UNIT",
    ]

    /// logshipd's own namespace (`LOGSHIP_PRIORITY_CLASS`, `LOGSHIP_SOURCE`, `LOGSHIP_TRUNCATED`).
    package static let namespace = "LOGSHIP_"

    /// The prefix of a sender's field that would otherwise take a reserved name.
    package static let fieldPrefix = "FIELD_"

    /// The longest name journald accepts.
    package static let maximumLength = 64

    /// ``written`` as a sender's key would come out: without journald's leading `_`.
    package static let reserved = Set(written.map { String($0.drop { $0 == "_" }) })

    /// The journal name of a sender's field `key`.
    package static func name(forField key: String) -> String {
        var name = String(key.uppercased().map { ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? $0 : "_" })
        name = String(name.drop { $0 == "_" })
        if name.isEmpty || name.first!.isNumber || reserved.contains(name) || name.hasPrefix(namespace)
            || name.hasPrefix(fieldPrefix)
        {
            name = fieldPrefix + name
        }
        return String(name.prefix(maximumLength))
    }

    /// The field key a name that is not one of logshipd's own stands for, in the socket inputs' lower case style:
    /// `REQUEST_ID` as `request_id`, `FIELD_PRIORITY` as `priority`. Case and punctuation do not come back.
    package static func field(forName name: String) -> String {
        (name.hasPrefix(fieldPrefix) ? String(name.dropFirst(fieldPrefix.count)) : name).lowercased()
    }
}
