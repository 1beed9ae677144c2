import Glibc

/// Waits until a socket is readable or its wake-up `eventfd` is written to: how the blocking readers of the
/// ingest and control sockets (``UnixStreamAcceptor``, ``UnixDatagramSocket``) wait, so that a stop can end the
/// wait.
///
/// - Returns: `true` when `descriptor` is readable, `false` once `wakeDescriptor` has been written to.
/// - Throws: ``IngestError`` when `poll` fails for another reason than a signal.
func waitUntilReadable(_ descriptor: Int32, orWokenBy wakeDescriptor: Int32, path: String) throws -> Bool {
    var descriptors = [
        pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
        pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
    ]
    while poll(&descriptors, 2, -1) < 0 {
        guard errno == EINTR else { throw IngestError.socketCall("poll", path: path, SystemError.describe(errno)) }
    }
    return descriptors[1].revents == 0
}
