import NIOCore
import NIOHTTP1

/// The life of one upload request, from the caller's `post` to the end of the response: which connection it is on,
/// how much of the response has arrived, and whether it may be sent again.
///
/// Pure: every event returns the one ``Action`` its owner (``UploadExchange``) carries out, and exactly one event
/// per exchange returns ``Action/finish(_:_:)``. The request is sent again only when it went out on a reused
/// keep-alive connection that closed before any answer and without an error (the remote ended the idle connection
/// just as it was taken); the second connection is a new one, so this happens at most once.
///
/// `Connection` is ``UploadConnection`` in the client; the tests use plain values.
struct UploadExchangeStateMachine<Connection> {
    private enum State {
        /// `post` has not reached the loop yet.
        case waiting(UploadRequest)
        /// Cancelled before it reached the loop: it ends there, sending nothing.
        case cancelledWhileWaiting
        /// On the loop, waiting for a connection.
        case connecting(UploadRequest)
        /// The request is written on `connection`; no final response head yet.
        case awaitingHead(UploadRequest, Connection, reused: Bool)
        /// The head is in, the body on its way; the response holds the start of the body read so far.
        case receivingBody(Connection, UploadResponse, excerptLimit: Int)
        case finished
        /// Only inside a mutating method: keeps the excerpt uniquely referenced while it grows.
        case modifying
    }

    /// What the owner must do after an event.
    enum Action {
        case none
        /// Start the timeout at `deadline`, then take an idle connection or open one, and report it with
        /// ``connected(_:reused:)`` (or ``connectionUnavailable(_:)``).
        case start(deadline: NIODeadline)
        /// Open a new connection within `deadline`: the reused one closed before answering.
        case openConnection(deadline: NIODeadline)
        /// Write `request` on the connection, whose handler then reports the response to this exchange.
        case write(UploadRequest, on: Connection)
        /// End the exchange: stop the timeout, do what ``ConnectionAction`` says, answer the caller with the result.
        case finish(Result<UploadResponse, any Error>, ConnectionAction)
        /// Close a connection that arrived after the exchange had ended.
        case close(Connection)
    }

    /// What becomes of the exchange's connection when it ends.
    enum ConnectionAction {
        /// The exchange had no connection.
        case none
        /// Close it: its answer is incomplete or still under way, or the remote does not keep it open.
        case close(Connection)
        /// Give it back to the pool for the next request: the response ended and left it open.
        case keep(Connection)
    }

    private var state: State

    init(request: UploadRequest) {
        state = .waiting(request)
    }

    /// The request reached the client's loop.
    mutating func arrived(isShutDown: Bool) -> Action {
        switch state {
        case .waiting(let request):
            guard !isShutDown else {
                state = .finished
                return .finish(.failure(UploadClientError.shutDown), .none)
            }
            state = .connecting(request)
            return .start(deadline: request.deadline)
        case .cancelledWhileWaiting:
            state = .finished
            return .finish(.failure(CancellationError()), .none)
        case .connecting, .awaitingHead, .receivingBody, .finished, .modifying:
            preconditionFailure("an exchange reaches the loop once")
        }
    }

    /// A connection is ready: an idle one (`reused`) or a new one.
    mutating func connected(_ connection: Connection, reused: Bool) -> Action {
        switch state {
        case .connecting(let request):
            state = .awaitingHead(request, connection, reused: reused)
            return .write(request, on: connection)
        case .finished:
            // Timed out or cancelled while connecting.
            return .close(connection)
        case .waiting, .cancelledWhileWaiting, .awaitingHead, .receivingBody, .modifying:
            preconditionFailure("a connection arrives only for an exchange that asked for one")
        }
    }

    /// No connection could be had: the connect failed, or the loop is shutting down.
    mutating func connectionUnavailable(_ error: any Error) -> Action {
        guard case .connecting = state else { return .none }
        state = .finished
        return .finish(.failure(error), .none)
    }

    mutating func receivedHead(_ head: HTTPResponseHead) -> Action {
        // An informational answer (1xx) is followed by the real one.
        guard case .awaitingHead(let request, let connection, _) = state, head.status.code >= 200 else { return .none }
        state = .receivingBody(connection, UploadResponse(head: head, excerpt: []), excerptLimit: request.excerptLimit)
        return .none
    }

    /// A part of the response body: kept up to the request's excerpt limit, the rest dropped.
    mutating func receivedBodyPart(_ part: ByteBuffer) -> Action {
        guard case .receivingBody(let connection, var response, let limit) = state, response.excerpt.count < limit
        else { return .none }
        state = .modifying
        response.excerpt += part.readableBytesView.prefix(limit - response.excerpt.count)
        state = .receivingBody(connection, response, excerptLimit: limit)
        return .none
    }

    mutating func receivedEnd() -> Action {
        // Without a final head, the end is an informational answer's.
        guard case .receivingBody(let connection, let response, _) = state else { return .none }
        state = .finished
        return .finish(.success(response), response.head.isKeepAlive ? .keep(connection) : .close(connection))
    }

    /// The connection closed, or turned out closed when the request was to be written.
    ///
    /// - Parameter firstError: The first error the connection met, if any: what the request fails with.
    mutating func connectionClosed(firstError: (any Error)?) -> Action {
        switch state {
        case .awaitingHead(let request, _, reused: true) where firstError == nil:
            // The remote closed the idle connection as it was taken: a new one gets the request.
            state = .connecting(request)
            return .openConnection(deadline: request.deadline)
        case .awaitingHead(_, let connection, _):
            state = .finished
            let error = firstError ?? UploadClientError.connectionClosed(responseStarted: false)
            return .finish(.failure(error), .close(connection))
        case .receivingBody(let connection, _, _):
            state = .finished
            let error = firstError ?? UploadClientError.connectionClosed(responseStarted: true)
            return .finish(.failure(error), .close(connection))
        case .waiting, .cancelledWhileWaiting, .connecting, .finished, .modifying:
            return .none
        }
    }

    /// The connection met an error (a reset, a TLS alert, a malformed response): the request fails with it.
    mutating func errorCaught(_ error: any Error) -> Action {
        switch state {
        case .awaitingHead(_, let connection, _), .receivingBody(let connection, _, _):
            state = .finished
            return .finish(.failure(error), .close(connection))
        case .waiting, .cancelledWhileWaiting, .connecting, .finished, .modifying:
            return .none
        }
    }

    /// The deadline passed: the request fails, with the response's status if its head had arrived.
    mutating func timedOut() -> Action {
        switch state {
        case .connecting:
            state = .finished
            return .finish(.failure(UploadClientError.timedOutConnecting), .none)
        case .awaitingHead(_, let connection, _):
            state = .finished
            return .finish(.failure(UploadClientError.timedOut(status: nil)), .close(connection))
        case .receivingBody(let connection, let response, _):
            state = .finished
            return .finish(.failure(UploadClientError.timedOut(status: response.status)), .close(connection))
        case .waiting, .cancelledWhileWaiting, .finished, .modifying:
            return .none
        }
    }

    /// The calling task was cancelled; on the loop, or before the request reached it.
    mutating func cancelled() -> Action {
        switch state {
        case .waiting:
            state = .cancelledWhileWaiting
            return .none
        case .connecting:
            state = .finished
            return .finish(.failure(CancellationError()), .none)
        case .awaitingHead(_, let connection, _), .receivingBody(let connection, _, _):
            // Its answer may still be under way: the connection cannot carry another request.
            state = .finished
            return .finish(.failure(CancellationError()), .close(connection))
        case .cancelledWhileWaiting, .finished, .modifying:
            return .none
        }
    }
}
