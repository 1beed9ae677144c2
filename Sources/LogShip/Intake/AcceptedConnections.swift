import NIOCore
import Synchronization

/// Accepted connections between the moment their channel is wrapped and the moment the accept loop takes them.
///
/// NIO's async server channel hands accepted connections to the accept loop through a stream; a connection whose
/// set-up completes after that stream has ended (the listener closing while clients connect) is dropped by NIO,
/// and a dropped `NIOAsyncChannel` that was never closed traps ("Deinited NIOAsyncWriter without calling
/// finish()", swift-nio#2637). Every connection is held here until the loop takes it; once the loop has ended,
/// ``close()`` closes those left over, and set-ups that complete later fail, so NIO closes their channels.
final class AcceptedConnections<Connection: Sendable>: Sendable {
    private struct State {
        var waiting: [ObjectIdentifier: Connection] = [:]
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Wraps a new channel with `make` and holds the result, unless the listener has closed.
    ///
    /// - Throws: ``IngestError`` once closed (the channel's set-up fails and NIO closes it), or what `make` throws.
    func admit(_ channel: any Channel, _ make: () throws -> Connection) throws -> Connection {
        try state.withLock { state in
            guard !state.isClosed else { throw IngestError.listenerClosed }
            let connection = try make()
            state.waiting[ObjectIdentifier(channel)] = connection
            return connection
        }
    }

    /// The accept loop has taken the connection of `channel`: it is the loop's to close from now on.
    func take(_ channel: any Channel) {
        _ = state.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Refuses further connections and returns those never taken, for the caller to close.
    func close() -> [Connection] {
        state.withLock { state in
            state.isClosed = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
    }
}
