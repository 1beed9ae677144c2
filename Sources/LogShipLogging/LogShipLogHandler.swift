import Logging

/// A swift-log backend that sends each record to logshipd's datagram ingest socket as a JSON line.
///
/// ```swift
/// LoggingSystem.bootstrap { LogShipLogHandler(label: $0) }
/// logger.error("payment failed", metadata: ["order": "1234"])
/// logger.critical("worker 7 died", metadata: .crashReport)   // shipped as a crash report, ahead of the rest
/// ```
///
/// The level becomes the record's severity, the metadata its fields, and the logger's label, source, file,
/// function and line are added as fields. Logging never waits for the daemon: records go to a
/// ``LogShipSink`` that sends them from a thread of its own, and drops (and counts) what does not fit while
/// the daemon is away.
public struct LogShipLogHandler: LogHandler {
    /// The metadata key that sets the record's priority class (`crash`, `error`, `warning`, `info`, `debug`)
    /// instead of the one its level maps to.
    public static let priorityKey = "logship.priority"

    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .info

    private let label: String
    private let sink: LogShipSink

    /// - Parameters:
    ///   - label: The logger's label, sent as the field `logger`.
    ///   - sink: Where records go; by default one sink per process, to `$LOGSHIPD_INGEST_DATAGRAM` or
    ///     `/run/logshipd/ingest.dgram`.
    public init(label: String, sink: LogShipSink = .shared) {
        self.label = label
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let metadata = event.metadata { merged.merge(metadata) { $1 } }
        let priority = merged.removeValue(forKey: Self.priorityKey).map { "\($0)" }
        var fields: [(String, String)] = merged.map { ($0.key, "\($0.value)") }
        fields += [
            ("logger", label), ("source", event.source), ("file", event.file), ("function", event.function),
            ("line", String(event.line)),
        ]
        sink.send(
            JSONLine.record(
                message: "\(event.message)", severity: Self.severity(of: event.level), priority: priority,
                fields: fields))
    }

    /// The syslog severity for a swift-log level.
    static func severity(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

extension Logger.Metadata {
    /// Marks a record as a crash report: logshipd ships it ahead of every other class.
    public static var crashReport: Logger.Metadata { [LogShipLogHandler.priorityKey: "crash"] }
}
