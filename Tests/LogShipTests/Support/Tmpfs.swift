import Foundation
import LogShipTestKit
import Testing

/// Mounts a tmpfs of `size` (`8m`) on `directory`, or on a new temporary directory; returns where. Needs root.
/// The caller unmounts it: `defer { _ = umount2(path, Int32(MNT_DETACH)) }`.
@discardableResult
func mountTmpfs(size: String, on directory: String? = nil) async throws -> String {
    let mountPoint = try directory ?? TemporaryDirectory.make()
    let mount = try await run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint])
    try #require(mount.status == 0, "mount: \(mount.standardError)")
    return mountPoint
}
