/// Byte counts for people, in the binary units the configuration takes (`spool.max_bytes: 256MiB`).
public enum ByteCountText {
    /// `0 B`, `900 B`, `7.5 KiB`, `73 KiB`, `1.0 GiB`: the largest unit that leaves at least 1, with a decimal
    /// below 10 of it.
    public static func approximate(_ count: Int) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count)
        var unit = -1
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let rounded = value < 10 ? (value * 10).rounded(.down) / 10 : value.rounded(.down)
        return value < 10 ? "\(rounded) \(units[unit])" : "\(Int(rounded)) \(units[unit])"
    }
}
