#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A listening Unix stream socket that hands each connection, framed into records, to a handler together with
/// the peer's kernel-reported credentials.
///
/// Connections are accepted by ``UnixStreamAcceptor`` on a thread of their own and each is served in its own
/// child task, so a client that connects and never writes, or writes a byte a second, holds only its own task. A
/// ``ConnectionLimiter`` bounds how many are served at once; what happens beyond it is the limits' ``OverCap``.
/// No connection is closed with bytes in its socket that its writer was told were written: a connection is
/// closed by the daemon only after its input is shut (the writer's next write fails) and what its socket held is
/// read to the end and handed on.
final class UnixStreamListener: Sendable {
    /// A connection: the frames of each read together, and the bytes to answer with.
    typealias Connection = NIOAsyncChannel<FrameRead, ByteBuffer>

    /// A connection reads ahead of its handler by at most two hand-overs of frames (``FrameBatcher``): a client
    /// writing faster than the spool commits waits in its socket, not in the daemon's memory.
    private static let connectionConfiguration = Connection.Configuration(
        backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2))

    /// How long a stop waits for the clients of open connections to end them.
    static let drainTimeout = Duration.seconds(2)

    /// How long a stop waits, once every input is shut, for the handlers to hand on what their sockets held before
    /// it cancels them, losing what they still hold. Not ``drainTimeout``: on a loaded machine handing on waits for
    /// the spool, and 2 s cancelled handlers holding lines their writers had been told were written (lost in the
    /// socket-activation restart test, in full test runs).
    static let handOnTimeout = Duration.seconds(30)

    /// How long a connection over its user's cap waits unread for a place before it is refused.
    static let holdTimeout = Duration.seconds(10)

    /// What happens to a connection over the caps.
    enum OverCap: Equatable, Sendable {
        /// It is closed at once, after the refusal line: the control socket's client is told why, and tries again.
        case refuse
        /// It is held unread, up to `maximum` at once, for at most ``holdTimeout``, and served as soon as one of
        /// its user's connections ends; beyond that it is refused, its socket read to the end before the close.
        /// No connection is accepted while every place is taken: the rest wait in the kernel's queue.
        case hold(maximum: Int)
    }

    /// How many connections the listener serves at once, and how long a request may take to arrive.
    struct Limits: Sendable {
        var maximum: Int
        var maximumPerUser: Int
        /// Places only root and logshipd's own user may take (see ``ConnectionLimiter``).
        var operatorReserve: Int
        var overCap: OverCap
        /// For a request/response socket: how long a client with every request answered has to send the next
        /// one before its connection is closed (``RequestDeadlineHandler``); `nil` for the ingest socket, whose
        /// clients may stay quiet for as long as they like.
        var requestDeadline: Duration?

        init(
            maximum: Int, maximumPerUser: Int, operatorReserve: Int = 0, overCap: OverCap = .refuse,
            requestDeadline: Duration? = nil
        ) {
            self.maximum = maximum
            self.maximumPerUser = min(maximumPerUser, maximum)
            self.operatorReserve = operatorReserve
            self.overCap = overCap
            self.requestDeadline = requestDeadline
        }
    }

    /// A connection the listener has wrapped, with what a stop, a promotion or an expiry acts on.
    private struct Entry {
        var channel: any Channel
        var descriptor: Int32
        /// Whether the connection stands between two records (``ConnectionFrameDecoder``), on its loop.
        var isBetweenRecords: NIOLoopBoundBox<Bool>
        var expiry: Scheduled<Void>?
    }

    private struct Places {
        var limiter: ConnectionLimiter
        var entries: [Int: Entry] = [:]
        var nextID = 0
        /// The accept loop, waiting for a free place.
        var roomWaiter: CheckedContinuation<Void, Never>?
        var isClosed = false
    }

    var path: String { acceptor.path }
    private let acceptor: UnixStreamAcceptor
    private let maximumFrameBytes: Int
    private let limits: Limits
    private let greeting: [UInt8]
    private let refusal: [UInt8]
    private let adopted: [Int32]
    private let store: ConnectionStore?
    private let refusals: ConnectionRefusals
    private let served = ServedConnections()
    private let places: Mutex<Places>
    private let group: any EventLoopGroup
    private let logger: Logger

    private init(
        acceptor: UnixStreamAcceptor, maximumFrameBytes: Int, limits: Limits, greeting: [UInt8], refusal: [UInt8],
        adopted: [Int32], store: ConnectionStore?, refusals: ConnectionRefusals, group: any EventLoopGroup,
        logger: Logger
    ) {
        self.acceptor = acceptor
        self.maximumFrameBytes = maximumFrameBytes
        self.limits = limits
        self.greeting = greeting
        self.refusal = refusal
        self.adopted = adopted
        self.store = store
        self.refusals = refusals
        let maximumHeld = if case .hold(let maximum) = limits.overCap { maximum } else { 0 }
        places = Mutex(Places(limiter: ConnectionLimiter(
            maximum: limits.maximum, maximumPerUser: limits.maximumPerUser, maximumHeld: maximumHeld,
            operatorReserve: limits.operatorReserve, operators: [0, getuid()])))
        self.group = group
        self.logger = logger
    }

    /// Binds `path`, replacing a stale socket file, and sets its mode; or serves `passed`, a listening socket
    /// systemd holds for `path` (socket activation), which it neither creates, removes nor listens on again.
    ///
    /// - Parameters:
    ///   - passed: A listening socket passed by systemd, to use instead of binding.
    ///   - maximumFrameBytes: The longest record a connection may send; longer ones are cut and marked.
    ///   - limits: How many connections are served at once, in all and from one user.
    ///   - greeting: Written to every connection admitted, as soon as it is accepted and on the accepting thread,
    ///     so that a client waiting for it hears at once even while the daemon is busy (the control socket's
    ///     ``ControlProtocol/greeting``); empty for none.
    ///   - refusal: Written instead to a connection the limits refuse, before it is closed (the control socket's
    ///     ``ControlProtocol/refusal(_:)``); empty for none.
    ///   - adopted: Connections of this socket that the service manager's store kept across a restart, served
    ///     as if just accepted.
    ///   - store: Where a stop hands the connections it serves, when the service manager keeps them.
    ///   - refusals: Where refused connections are counted.
    ///   - group: Where the connections' reads and writes run.
    /// - Throws: ``IngestError`` when the path is in use or cannot be bound.
    static func bind(
        path: String, passed: Int32? = nil, mode: mode_t, maximumFrameBytes: Int, limits: Limits,
        greeting: [UInt8] = [], refusal: [UInt8] = [], adopted: [Int32] = [], store: ConnectionStore? = nil,
        refusals: ConnectionRefusals = ConnectionRefusals(), group: any EventLoopGroup, logger: Logger
    ) throws -> UnixStreamListener {
        let acceptor = try passed.map { try UnixStreamAcceptor.adopt(descriptor: $0, path: path) }
            ?? UnixStreamAcceptor.bind(path: path, mode: mode, backlog: SOMAXCONN)
        return UnixStreamListener(
            acceptor: acceptor, maximumFrameBytes: maximumFrameBytes, limits: limits, greeting: greeting,
            refusal: refusal, adopted: adopted, store: store, refusals: refusals, group: group, logger: logger)
    }

    /// Accepts connections until ``close()`` is called, serves what was accepted until each client ends it or
    /// ``drainTimeout`` passes, and closes the socket (removing the file it created).
    ///
    /// A stop accepts nothing more (under socket activation, connections not yet accepted wait in the kernel for
    /// the next daemon; a socket the daemon bound loses its file first, and what was queued is taken). With a
    /// ``ConnectionStore``, each connection that stands between two records is handed to it at once, unread
    /// bytes and all, for the next daemon. Every other connection is served: a client still connected after
    /// ``drainTimeout`` has its input shut, so that its next write fails, and what its socket holds is read to the
    /// end and handed on; a handler that has not ended ``handOnTimeout`` later is cancelled.
    ///
    /// - Parameter handler: Serves one connection; it must not throw, because one bad client must not take the
    ///   listener down.
    func serve(_ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void) async throws {
        // The blocking poll/accept loop gets a thread of its own, off the cooperative pool.
        let acceptThread = NIOThreadPool(numberOfThreads: 1)
        acceptThread.start()
        let served = await Result {
            try await withTaskCancellationHandler {
                // The accept loop runs on an event loop, not the cooperative pool: accepting the next client (and
                // greeting it) never waits for a pool thread that busy tasks hold.
                try await withTaskExecutorPreference(EventLoopTaskExecutor(group.next())) {
                    try await serveUntilClosed(acceptingOn: acceptThread, handler)
                }
            } onCancel: {
                close()
            }
        }
        acceptor.close()
        try? await acceptThread.shutdownGracefully()
        switch served {
        case .success, .failure(is CancellationError):
            // Cancelled outright (a forced shutdown): nothing more to do than for a close.
            return
        case .failure(let error):
            throw error
        }
    }

    private func serveUntilClosed(
        acceptingOn acceptThread: NIOThreadPool,
        _ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void
    ) async throws {
        let acceptor = self.acceptor
        try await withThrowingDiscardingTaskGroup { group in
            func serve(_ accepted: UnixStreamAcceptor.Accepted, id: Int, admission: ConnectionLimiter.Admission) async {
                if case .refuse = admission {
                    // Refused: the writer's next write fails, and what it wrote before is read to the end.
                    shutdown(accepted.descriptor, Int32(SHUT_RD))
                }
                let connection: Connection
                let isBetweenRecords: NIOLoopBoundBox<Bool>
                do {
                    (connection, isBetweenRecords) = try await wrap(accepted.descriptor, reading: admission != .hold)
                } catch {
                    // NIO took the socket, and closes it, unless making it non-blocking failed (fcntl), which
                    // leaves one descriptor open: nothing here can tell the two apart.
                    release(id)
                    logger.warning("a connection could not be set up", metadata: ["logship.error": "\(error)"])
                    return
                }
                // Never refused: this listener's stop ends inputs, and never calls `closeAll()`.
                _ = served.insert(connection.channel)
                let entry = Entry(
                    channel: connection.channel, descriptor: accepted.descriptor, isBetweenRecords: isBetweenRecords)
                register(id, entry)
                // On the channel's own loop: the reads reach the task without a thread switch, and the frames are
                // parsed where they were read (see docs/ARCHITECTURE.md).
                group.addTask(executorPreference: EventLoopTaskExecutor(connection.channel.eventLoop)) {
                    await handler(connection, accepted.peer)
                    self.served.remove(connection.channel)
                    self.release(id)
                }
            }
            func admitAndServe(_ accepted: UnixStreamAcceptor.Accepted) async {
                let (id, admission) = admit(accepted)
                if let admission { await serve(accepted, id: id, admission: admission) }
            }

            for descriptor in adopted {
                guard let accepted = try? UnixStreamAcceptor.Accepted(descriptor, path: acceptor.path) else { continue }
                await admitAndServe(accepted)
            }
            if !adopted.isEmpty { ConnectionStore.removeStored() }
            while await waitForRoom() {
                do {
                    // Greeted on the accept thread, the moment it is accepted.
                    let next = try await acceptThread.runIfActive { try self.acceptAdmitted() }
                    guard let (accepted, id, admission) = next else { break }
                    await serve(accepted, id: id, admission: admission)
                } catch let error as IngestError {
                    // Out of descriptors or memory: the connection waits in the queue. Waiting a moment keeps a
                    // persistent failure from spinning.
                    if error.isOutOfDescriptors, let report = refusals.count(.descriptors) {
                        logger.error(
                            "accepting connections failed for want of file descriptors; they wait in the queue",
                            metadata: ["logship.socket": "\(path)", "logship.connections.refused": "\(report)",
                                       "logship.error": "\(error)"])
                    } else if !error.isOutOfDescriptors {
                        logger.error("accepting a connection failed", metadata: ["logship.error": "\(error)"])
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // A socket the daemon bound closes with it: no client may connect to it from now on, and what clients
            // queued already is served. (One systemd passed keeps its queue for the next daemon.)
            if acceptor.ownsPath {
                acceptor.stopListening()
                for accepted in acceptor.acceptQueued() {
                    await admitAndServe(accepted)
                }
            }
            if let store { await handOver(to: store) }
            if await !served.waitUntilEmpty(within: Self.drainTimeout) {
                endInputs()
                if await !served.waitUntilEmpty(within: Self.handOnTimeout) {
                    logger.error(
                        """
                        connections still handing on records \(Self.handOnTimeout) after their input was shut \
                        are cancelled; what they still hold is lost
                        """,
                        metadata: ["logship.socket": "\(path)"])
                    group.cancelAll()
                }
            }
        }
    }

    /// Blocks until a connection is accepted, closing those the limits refuse at once, and greets one they serve;
    /// `nil` once ``close()`` is called. Runs on the accept thread, so that the greeting goes out the moment the
    /// connection is accepted.
    private func acceptAdmitted() throws -> (UnixStreamAcceptor.Accepted, Int, ConnectionLimiter.Admission)? {
        while let accepted = try acceptor.accept() {
            let (id, admission) = admit(accepted)
            if let admission { return (accepted, id, admission) }
        }
        return nil
    }

    /// Gives a new connection a place and decides what it is; `nil` when it was refused and closed at once.
    private func admit(_ accepted: UnixStreamAcceptor.Accepted) -> (Int, ConnectionLimiter.Admission?) {
        let (id, admission) = places.withLock { places in
            defer { places.nextID += 1 }
            return (places.nextID, places.limiter.admit(places.nextID, uid: accepted.peer.uid))
        }
        switch admission {
        case .serve:
            if !greeting.isEmpty {
                // A new connection's send buffer is empty: a short line always fits at once.
                _ = Glibc.send(accepted.descriptor, greeting, greeting.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
        case .hold:
            break
        case .refuse(let reason):
            report(reason, peer: accepted.peer)
            guard limits.overCap == .refuse else { break }
            if !refusal.isEmpty {
                _ = Glibc.send(accepted.descriptor, refusal, refusal.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            Glibc.close(accepted.descriptor)
            release(id)
            return (id, nil)
        }
        return (id, admission)
    }

    /// Returns `true` once a place is free for a new connection, `false` once the listener is closed. Only a
    /// socket that holds connections over the caps waits: one that refuses them takes every connection at once.
    private func waitForRoom() async -> Bool {
        guard case .hold = limits.overCap else { return !places.withLock { $0.isClosed } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isReady = places.withLock { places in
                if places.isClosed || places.limiter.hasRoom { return true }
                places.roomWaiter = continuation
                return false
            }
            if isReady { continuation.resume() }
        }
        return !places.withLock { $0.isClosed }
    }

    /// Keeps what a stop, a promotion or an expiry acts on for connection `id`, and holds it if it is to be held.
    private func register(_ id: Int, _ entry: Entry) {
        let role = places.withLock { places -> ConnectionLimiter.Role? in
            let role = places.limiter.role(of: id)
            if role != nil { places.entries[id] = entry }
            return role
        }
        switch role {
        case .held:
            let expiry = entry.channel.eventLoop.scheduleTask(in: TimeAmount(Self.holdTimeout)) {
                self.expire(id)
            }
            let isHeld = places.withLock { places in
                places.entries[id]?.expiry = expiry
                return places.limiter.role(of: id) == .held
            }
            if !isHeld { expiry.cancel() }
        case .served:
            // Promoted while it was being wrapped unread.
            entry.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        case .refused, nil:
            break
        }
    }

    /// Frees the place of connection `id` once it has closed, and serves a held connection of its user in its
    /// stead.
    private func release(_ id: Int) {
        let (released, promoted, roomWaiter) = places.withLock { places in
            let released = places.entries.removeValue(forKey: id)
            let promoted = places.limiter.release(id).flatMap { places.entries[$0] }
            let roomWaiter = places.limiter.hasRoom ? places.roomWaiter : nil
            if roomWaiter != nil { places.roomWaiter = nil }
            return (released, promoted, roomWaiter)
        }
        released?.expiry?.cancel()
        if let promoted {
            promoted.expiry?.cancel()
            promoted.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        }
        roomWaiter?.resume()
    }

    /// Refuses connection `id` if it is still held: it has waited ``holdTimeout`` for a place.
    private func expire(_ id: Int) {
        let entry = places.withLock { places in
            places.limiter.expire(id) ? places.entries[id] : nil
        }
        guard let entry else { return }
        report(.userCap, peer: nil)
        endInput(entry)
    }

    /// Shuts a connection's input at its socket and reads on: the writer's next write fails, and what the socket
    /// holds is read to the end, then the connection ends as at the client's end of file.
    private func endInput(_ entry: Entry) {
        entry.channel.eventLoop.execute {
            // On the channel's loop, an active channel's descriptor is still its own.
            guard entry.channel.isActive else { return }
            shutdown(entry.descriptor, Int32(SHUT_RD))
            entry.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        }
    }

    /// Ends the input of every connection served or held (``endInput(_:)``).
    private func endInputs() {
        for entry in places.withLock({ Array($0.entries.values) }) { endInput(entry) }
    }

    /// Hands every connection that stands between two records to `store`, as many as it keeps, and closes the
    /// daemon's copy: what its client writes from now on waits in the socket for the next daemon.
    private func handOver(to store: ConnectionStore) async {
        let entries = places.withLock { places in
            places.entries.filter { places.limiter.role(of: $0.key) != .refused }.map(\.value)
        }
        var handedOver = 0
        for entry in entries where handedOver < store.capacity {
            // On the channel's loop, nothing is read between the look at its framing and the close.
            let isHandedOver = try? await entry.channel.eventLoop.submit { () -> Bool in
                guard entry.channel.isActive, entry.isBetweenRecords.value else { return false }
                guard store.store([entry.descriptor]) == 1 else { return false }
                entry.channel.close(promise: nil)
                return true
            }.get()
            if isHandedOver == true { handedOver += 1 }
        }
        logger.info(
            "connections handed to the service manager's store for the next start",
            metadata: ["logship.socket": "\(path)", "logship.connections.stored": "\(handedOver)",
                       "logship.connections.served": "\(entries.count - handedOver)"])
    }

    /// An accepted socket as a channel that frames what it reads; one to be held is not read until told to.
    private func wrap(_ descriptor: Int32, reading: Bool) async throws -> (Connection, NIOLoopBoundBox<Bool>) {
        let (maximumFrameBytes, requestDeadline) = (self.maximumFrameBytes, limits.requestDeadline)
        return try await ClientBootstrap(group: group)
            // A read cycle is at most four reads of at most 64 KiB (NIO's defaults, stated): what one cycle can
            // hand the intake is bounded by it (``FrameBatcher``).
            .channelOption(.maxMessagesPerRead, value: 4)
            .channelOption(
                .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 64 << 10))
            .channelOption(.autoRead, value: reading)
            .withConnectedSocket(descriptor) { channel in
            channel.eventLoop.makeCompletedFuture {
                let isBetweenRecords = NIOLoopBoundBox(true, eventLoop: channel.eventLoop)
                let decoder = ConnectionFrameDecoder(
                    maximumRecordBytes: maximumFrameBytes, isBetweenRecords: isBetweenRecords)
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(decoder))
                try channel.pipeline.syncOperations.addHandler(FrameBatcher())
                if let requestDeadline {
                    try channel.pipeline.syncOperations.addHandler(
                        RequestDeadlineHandler(controlTimeout: requestDeadline))
                }
                let connection = try Connection(
                    wrappingChannelSynchronously: channel, configuration: Self.connectionConfiguration)
                return (connection, isBetweenRecords)
            }
        }
    }

    /// Serves as ``serve(_:)`` does until graceful shutdown, when it stops accepting.
    func serveUntilGracefulShutdown(
        _ handler: @escaping @Sendable (Connection, PeerCredentials) async -> Void
    ) async throws {
        try await withGracefulShutdownHandler {
            try await serve(handler)
        } onGracefulShutdown: {
            self.close()
        }
    }

    /// Stops accepting: ``serve(_:)`` serves what was already accepted, and returns once it is done.
    func close() {
        let roomWaiter = places.withLock { places in
            places.isClosed = true
            defer { places.roomWaiter = nil }
            return places.roomWaiter
        }
        roomWaiter?.resume()
        acceptor.wake()
    }

    /// Counts a refusal, and logs it with those since the last report when it is time to.
    private func report(_ reason: ConnectionRefusal, peer: PeerCredentials?) {
        guard let report = refusals.count(reason) else { return }
        let what = switch limits.overCap {
        case .refuse: "closing them at once"
        case .hold: "each read to the end of what it holds, then closed"
        }
        var metadata: Logger.Metadata = [
            "logship.socket": "\(path)",
            "logship.connections.refused": "\(report)",
            "logship.connections.maximum": "\(limits.maximum)",
            "logship.connections.maximum_per_user": "\(limits.maximumPerUser)",
        ]
        if let peer {
            metadata["logship.peer.uid"] = "\(peer.uid)"
            metadata["logship.peer.pid"] = "\(peer.pid)"
            metadata["logship.peer.comm"] = "\(peer.comm ?? "?")"
        }
        logger.warning(
            "refused \(report) connection(s) since the last report: \(reason); \(what)", metadata: metadata)
    }
}
