/// The messages `logctl` and the daemon exchange on the control socket: one JSON object per line each way, one
/// response per request, in order.
public enum ControlProtocol {
    /// The longest request line the daemon reads.
    public static let maximumRequestBytes = 16 << 20
}
