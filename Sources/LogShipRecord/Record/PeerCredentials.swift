/// Who sent a record, as the kernel vouches for it (`SO_PEERCRED` or `SCM_CREDENTIALS`), never as the payload
/// claims.
public struct PeerCredentials: Hashable, Sendable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// The process name from `/proc/<pid>/comm`; `nil` when the process was gone before it could be read.
    public var comm: String?

    public init(pid: Int32, uid: UInt32, gid: UInt32, comm: String?) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.comm = comm
    }
}
