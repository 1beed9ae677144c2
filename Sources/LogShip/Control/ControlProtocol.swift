/// The messages `logctl` and the daemon exchange on the control socket: one JSON object per line each way, one
/// response per request, in order, after the daemon's greeting.
public enum ControlProtocol {
    /// The line the daemon writes first on every control connection, before any request.
    ///
    /// A client sends nothing until it has read it: a client pointed at another socket (an ingest socket, which
    /// takes any line as a log record and answers nothing) finds out within ``greetingTimeout`` instead of
    /// waiting forever, and its request is never shipped upstream as a record.
    public static let greeting = #"{"logshipd":"control","protocol":1}"#

    /// How long a client waits for the ``greeting``.
    public static let greetingTimeout = Duration.seconds(3)

    /// The longest request line the daemon reads: a longer one is answered with an error, and what a client has
    /// sent of it is never held whole.
    public static let maximumRequestBytes = 1 << 20
}
