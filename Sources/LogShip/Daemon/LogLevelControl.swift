import Logging
import Synchronization

/// The daemon's own log level, which a reload may change while it runs (`log.level`).
public final class LogLevelControl: Sendable {
    private let current: Mutex<Logger.Level>

    public init(_ level: Logger.Level) {
        current = Mutex(level)
    }

    public var level: Logger.Level {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}

/// A log handler whose level follows a ``LogLevelControl``.
public struct ControlledLogHandler: LogHandler {
    private var handler: any LogHandler
    private let control: LogLevelControl

    public init(_ handler: any LogHandler, control: LogLevelControl) {
        self.handler = handler
        self.control = control
    }

    public var logLevel: Logger.Level {
        get { control.level }
        set { control.level = newValue }
    }

    public var metadata: Logger.Metadata {
        get { handler.metadata }
        set { handler.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { handler[metadataKey: key] }
        set { handler[metadataKey: key] = newValue }
    }

    /// Logger has already checked the level (``logLevel``); the inner handler only writes.
    public func log(event: LogEvent) {
        handler.log(event: event)
    }
}
