/// The messages `logctl` and the daemon exchange on the control socket: one JSON object per line each way, one
/// response per request, in order.
public enum ControlProtocol {
    /// The longest request line the daemon reads: a longer one is answered with an error, and what a client has
    /// sent of it is never held whole.
    public static let maximumRequestBytes = 1 << 20
}
