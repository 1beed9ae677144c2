/// The systemd unit a cgroup path belongs to, as journald names a sender's `_SYSTEMD_UNIT`.
enum ControlGroupPath {
    /// The first component below the slices, when it is a unit that holds processes (`.service`, `.scope`):
    /// `/system.slice/hog.service` is `hog.service`, and so is `/system.slice/hog.service/worker`, a cgroup the
    /// service made itself. `nil` for the root cgroup, or a path with no such unit.
    ///
    /// Only systemd creates the cgroups down to the unit; whatever a delegated service names below it never
    /// decides the unit.
    static func unit(of path: some Collection<UInt8>) -> String? {
        for component in path.split(separator: UInt8(ascii: "/")) {
            let name = String(decoding: component, as: UTF8.self)
            if name.hasSuffix(".slice") { continue }
            return name.hasSuffix(".service") || name.hasSuffix(".scope") ? name : nil
        }
        return nil
    }
}
