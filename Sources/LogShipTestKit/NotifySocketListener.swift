import Foundation
import LogShip
import Synchronization

/// What a service manager hears: a `NOTIFY_SOCKET` datagram socket that records every notification a child
/// process sends (through libsystemd's `sd_notify`), or the same record for an in-process daemon.
public final class NotifySocketListener: ServiceManagerNotifier, @unchecked Sendable {
    // @unchecked: the descriptor is only read by the listener's own thread; the messages are in a Mutex.

    /// One notification and when it arrived.
    public struct Notification: Sendable {
        public var state: String
        public var arrivedAt: ContinuousClock.Instant
    }

    /// The socket's path, for `NOTIFY_SOCKET`; `nil` for a listener used in-process.
    public let path: String?
    private let descriptor: Int32
    private let received = Mutex<[Notification]>([])

    /// A listener that is given notifications directly (an in-process daemon's notifier).
    public init() {
        path = nil
        descriptor = -1
    }

    /// Binds a datagram socket in `directory` and reads it on a thread of its own.
    public init(directory: String) throws {
        let path = "\(directory)/notify.sock"
        self.path = path
        descriptor = try bindUnixSocket(path, type: Int32(SOCK_DGRAM.rawValue))
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return }
                notify(String(decoding: buffer[..<count], as: UTF8.self))
            }
        }
    }

    deinit {
        if descriptor >= 0 { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    public func notify(_ state: String) {
        received.withLock { $0.append(Notification(state: state, arrivedAt: .now)) }
    }

    /// Every notification so far, oldest first.
    public var notifications: [Notification] { received.withLock { $0 } }

    /// The notifications that assign `key` (`READY`, `WATCHDOG`, `STATUS`, …), with the value assigned.
    public func assignments(of key: String) -> [(value: String, arrivedAt: ContinuousClock.Instant)] {
        notifications.flatMap { notification in
            notification.state.split(separator: "\n").compactMap { line -> (String, ContinuousClock.Instant)? in
                guard line.hasPrefix("\(key)=") else { return nil }
                return (String(line.dropFirst(key.count + 1)), notification.arrivedAt)
            }
        }
    }
}
