/// The labels of a record's Loki stream: only what the host vouches for.
///
/// `host`, `priority` (the class) and, for a journal record, `unit` (journald's `_SYSTEMD_UNIT`). A sender's fields
/// are never labels and never the line's top-level keys: they stay in the line's `fields` object (`fields_<key>`
/// after LogQL's `| json`), which is their prefix. A socket sender's `systemd_unit` or syslog tag is one of them.
enum LokiStreamLabels {
    static func labels(for record: LogRecord) -> [String: String] {
        var labels = ["host": record.host, "priority": record.priority.description]
        if let unit = record.vouchedUnit { labels["unit"] = unit }
        return labels
    }
}
