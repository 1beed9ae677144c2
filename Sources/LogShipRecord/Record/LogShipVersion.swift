/// logshipd's version: the one place it is written, for `logshipd --version`, `logctl --version` and status.
public enum LogShipVersion {
    public static let current = "0.5.0"
}
