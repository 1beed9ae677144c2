import NIOCore
import NIOHTTP1

/// One request of ``UploadClient`` on its loop: tells the exchange's ``UploadExchangeStateMachine`` what happened
/// and carries out the action it returns.
///
/// A value of two references, handed to the connection's handler while the request is on it and to the timeout;
/// what changes lives in one loop-bound box, the only allocation of its own a request makes.
struct UploadExchange: Sendable {
    private let client: UploadClient
    private let box: NIOLoopBoundBox<Running>

    /// The machine and what its actions need, touched only on the client's loop.
    private struct Running {
        var machine: UploadExchangeStateMachine<UploadConnection>
        /// Whom ``UploadExchangeStateMachine/Action/finish(_:_:)`` answers; set when the request reaches the loop.
        var continuation: CheckedContinuation<UploadResponse, any Error>?
        var timeout: NIOScheduledCallback?
    }

    /// An exchange for `request` that has not reached the loop yet; callable anywhere.
    init(_ request: UploadRequest, client: UploadClient) {
        self.client = client
        box = .makeBoxSendingValue(
            Running(machine: UploadExchangeStateMachine(request: request)), eventLoop: client.eventLoop)
    }

    /// Starts the exchange on the loop; `continuation` is resumed once, with the response or why there is none.
    func start(answering continuation: CheckedContinuation<UploadResponse, any Error>) {
        box.value.continuation = continuation
        run(box.value.machine.arrived(isShutDown: client.isShutDown))
    }

    /// Ends the exchange with `CancellationError`, or, before it reached the loop, has it end there.
    func cancel() {
        run(box.value.machine.cancelled())
    }

    // MARK: Told by the connection's handler

    func receivedHead(_ head: HTTPResponseHead) {
        run(box.value.machine.receivedHead(head))
    }

    func receivedBodyPart(_ part: ByteBuffer) {
        run(box.value.machine.receivedBodyPart(part))
    }

    func receivedEnd() {
        run(box.value.machine.receivedEnd())
    }

    func connectionClosed(firstError: (any Error)?) {
        run(box.value.machine.connectionClosed(firstError: firstError))
    }

    func errorCaught(_ error: any Error) {
        run(box.value.machine.errorCaught(error))
    }

    // MARK: Actions

    private func run(_ action: UploadExchangeStateMachine<UploadConnection>.Action) {
        switch action {
        case .none:
            break
        case .start(let deadline):
            do {
                box.value.timeout = try client.eventLoop.scheduleCallback(at: deadline, handler: self)
            } catch {
                // The loop is shutting down: no connection can be had either.
                run(box.value.machine.connectionUnavailable(error))
                return
            }
            if let idle = client.takeIdleConnection() {
                run(box.value.machine.connected(idle, reused: true))
            } else {
                openConnection(deadline: deadline)
            }
        case .openConnection(let deadline):
            openConnection(deadline: deadline)
        case .write(let request, let connection):
            let handler = connection.handler.value
            if !handler.write(request, for: self) {
                run(box.value.machine.connectionClosed(firstError: handler.firstError))
            }
        case .finish(let result, let connectionAction):
            box.value.timeout?.cancel()
            switch connectionAction {
            case .none:
                break
            case .close(let connection):
                connection.handler.value.detach()
                connection.channel.close(promise: nil)
            case .keep(let connection):
                connection.handler.value.detach()
                client.returnToPool(connection)
            }
            box.value.continuation?.resume(with: result)
        case .close(let connection):
            connection.channel.close(promise: nil)
        }
    }

    private func openConnection(deadline: NIODeadline) {
        client.connect(timeout: deadline - client.eventLoop.now).whenComplete { result in
            switch result {
            case .success(let connection):
                run(box.value.machine.connected(connection, reused: false))
            case .failure(let error):
                run(box.value.machine.connectionUnavailable(error))
            }
        }
    }
}

extension UploadExchange: NIOScheduledCallbackHandler {
    func handleScheduledCallback(eventLoop: some EventLoop) {
        run(box.value.machine.timedOut())
    }
}
