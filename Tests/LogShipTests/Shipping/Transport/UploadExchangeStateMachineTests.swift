import NIOCore
import NIOHTTP1
import Testing

@testable import LogShip

/// The exchange's decisions alone, connections being numbers: every event and the one action it returns.
@Suite("Upload exchange state machine")
struct UploadExchangeStateMachineTests {
    typealias Machine = UploadExchangeStateMachine<Int>

    /// An action, with what the tests compare of it.
    enum Did: Equatable {
        case nothing
        case start(NIODeadline)
        case openConnection(NIODeadline)
        case write(on: Int)
        case succeed(status: Int, excerpt: String, Then)
        case fail(Failure, Then)
        case close(Int)
    }

    enum Then: Equatable {
        case nothing, close(Int), keep(Int)
    }

    enum Failure: Equatable {
        case client(UploadClientError)
        case cancelled
        case other(String)
    }

    struct ConnectionReset: Error, CustomStringConvertible {
        var description: String { "connection reset by peer" }
    }

    static let deadline = NIODeadline.uptimeNanoseconds(10_000_000_000)

    static func request(excerptLimit: Int = 8) -> UploadRequest {
        UploadRequest(
            head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/ingest"), body: ByteBuffer(string: "{}\n"),
            excerptLimit: excerptLimit, deadline: deadline)
    }

    static func head(_ status: HTTPResponseStatus, keepAlive: Bool = true) -> HTTPResponseHead {
        HTTPResponseHead(version: .http1_1, status: status, headers: keepAlive ? [:] : ["Connection": "close"])
    }

    static func did(_ action: Machine.Action) -> Did {
        func then(_ connectionAction: Machine.ConnectionAction) -> Then {
            switch connectionAction {
            case .none: .nothing
            case .close(let connection): .close(connection)
            case .keep(let connection): .keep(connection)
            }
        }
        switch action {
        case .none: return .nothing
        case .start(let deadline): return .start(deadline)
        case .openConnection(let deadline): return .openConnection(deadline)
        case .write(_, let connection): return .write(on: connection)
        case .finish(.success(let response), let connectionAction):
            let excerpt = String(decoding: response.excerpt, as: UTF8.self)
            return .succeed(status: response.status, excerpt: excerpt, then(connectionAction))
        case .finish(.failure(let error as UploadClientError), let connectionAction):
            return .fail(.client(error), then(connectionAction))
        case .finish(.failure(is CancellationError), let connectionAction):
            return .fail(.cancelled, then(connectionAction))
        case .finish(.failure(let error), let connectionAction):
            return .fail(.other("\(error)"), then(connectionAction))
        case .close(let connection): return .close(connection)
        }
    }

    /// A machine whose request is written on connection `connection`.
    static func written(on connection: Int = 1, reused: Bool = true, excerptLimit: Int = 8) -> Machine {
        var machine = Machine(request: request(excerptLimit: excerptLimit))
        _ = machine.arrived(isShutDown: false)
        _ = machine.connected(connection, reused: reused)
        return machine
    }

    @Test("a request starts its timeout, is written on the connection it gets, and a kept-alive answer gives it back")
    func keptAlive() {
        var machine = Machine(request: Self.request())
        #expect(Self.did(machine.arrived(isShutDown: false)) == .start(Self.deadline))
        #expect(Self.did(machine.connected(1, reused: true)) == .write(on: 1))
        #expect(Self.did(machine.receivedHead(Self.head(.ok))) == .nothing)
        #expect(Self.did(machine.receivedBodyPart(ByteBuffer(string: "ok"))) == .nothing)
        #expect(Self.did(machine.receivedEnd()) == .succeed(status: 200, excerpt: "ok", .keep(1)))
    }

    @Test("a response that does not keep the connection alive closes it")
    func notKeptAlive() {
        var machine = Self.written()
        _ = machine.receivedHead(Self.head(.accepted, keepAlive: false))
        #expect(Self.did(machine.receivedEnd()) == .succeed(status: 202, excerpt: "", .close(1)))
    }

    @Test("an informational answer (100 Continue) is passed over, and its end too; the final answer counts")
    func informational() {
        var machine = Self.written()
        _ = machine.receivedHead(Self.head(.continue))
        #expect(Self.did(machine.receivedEnd()) == .nothing)
        _ = machine.receivedHead(Self.head(.created))
        #expect(Self.did(machine.receivedEnd()) == .succeed(status: 201, excerpt: "", .keep(1)))
    }

    @Test("the excerpt is the first bytes of the body up to the limit, across parts; the rest is dropped")
    func excerpt() {
        var machine = Self.written(excerptLimit: 8)
        _ = machine.receivedHead(Self.head(.badRequest))
        for part in ["bad ", "reco", "rd: line 1", " and more"] {
            _ = machine.receivedBodyPart(ByteBuffer(string: part))
        }
        #expect(Self.did(machine.receivedEnd()) == .succeed(status: 400, excerpt: "bad reco", .keep(1)))
    }

    @Test("a reused connection closed before any answer: the request goes once more, on a new connection")
    func retriedOnce() {
        var machine = Self.written(on: 1, reused: true)
        #expect(Self.did(machine.connectionClosed(firstError: nil)) == .openConnection(Self.deadline))
        #expect(Self.did(machine.connected(2, reused: false)) == .write(on: 2))
        #expect(
            Self.did(machine.connectionClosed(firstError: nil))
                == .fail(.client(.connectionClosed(responseStarted: false)), .close(2)))
    }

    @Test("a new connection closed before any answer fails the request; it is not sent again")
    func newConnectionClosed() {
        var machine = Self.written(on: 1, reused: false)
        #expect(
            Self.did(machine.connectionClosed(firstError: nil))
                == .fail(.client(.connectionClosed(responseStarted: false)), .close(1)))
    }

    @Test("a reused connection that closed after an error fails the request with that error, not sent again")
    func closedAfterError() {
        var machine = Self.written(on: 1, reused: true)
        #expect(
            Self.did(machine.connectionClosed(firstError: ConnectionReset()))
                == .fail(.other("connection reset by peer"), .close(1)))
    }

    @Test("a connection closed in the middle of the response fails the request as started")
    func closedMidResponse() {
        var machine = Self.written(on: 1, reused: true)
        _ = machine.receivedHead(Self.head(.ok))
        _ = machine.receivedBodyPart(ByteBuffer(string: "o"))
        #expect(
            Self.did(machine.connectionClosed(firstError: nil))
                == .fail(.client(.connectionClosed(responseStarted: true)), .close(1)))
    }

    @Test("an error on the connection fails the request with it and closes the connection")
    func errorCaught() {
        var machine = Self.written()
        #expect(Self.did(machine.errorCaught(ConnectionReset())) == .fail(.other("\(ConnectionReset())"), .close(1)))
        #expect(Self.did(machine.connectionClosed(firstError: ConnectionReset())) == .nothing, "ended once")
    }

    @Test("a failed connect fails the request")
    func connectFailed() {
        var machine = Machine(request: Self.request())
        _ = machine.arrived(isShutDown: false)
        let refused = machine.connectionUnavailable(ConnectionReset())
        #expect(Self.did(refused) == .fail(.other("\(ConnectionReset())"), .nothing))
    }

    @Test("the timeout while connecting fails the request; the connection that comes after is closed")
    func timedOutConnecting() {
        var machine = Machine(request: Self.request())
        _ = machine.arrived(isShutDown: false)
        #expect(Self.did(machine.timedOut()) == .fail(.client(.timedOutConnecting), .nothing))
        #expect(Self.did(machine.connected(1, reused: false)) == .close(1))
        #expect(Self.did(machine.connectionUnavailable(ConnectionReset())) == .nothing)
    }

    @Test("the timeout after the head keeps the response's status; before it, there is none")
    func timedOutWithStatus() {
        var waiting = Self.written()
        #expect(Self.did(waiting.timedOut()) == .fail(.client(.timedOut(status: nil)), .close(1)))
        var reading = Self.written()
        _ = reading.receivedHead(Self.head(.unauthorized))
        #expect(Self.did(reading.timedOut()) == .fail(.client(.timedOut(status: 401)), .close(1)))
        #expect(Self.did(reading.receivedEnd()) == .nothing, "ended once")
    }

    @Test("cancelled before it reached the loop, a request ends there, sending nothing")
    func cancelledWhileWaiting() {
        var machine = Machine(request: Self.request())
        #expect(Self.did(machine.cancelled()) == .nothing)
        #expect(Self.did(machine.arrived(isShutDown: false)) == .fail(.cancelled, .nothing))
    }

    @Test("cancelled on the loop, a request ends at once; the connection it was on is closed")
    func cancelledRunning() {
        var connecting = Machine(request: Self.request())
        _ = connecting.arrived(isShutDown: false)
        #expect(Self.did(connecting.cancelled()) == .fail(.cancelled, .nothing))
        var written = Self.written()
        #expect(Self.did(written.cancelled()) == .fail(.cancelled, .close(1)))
        #expect(Self.did(written.timedOut()) == .nothing, "ended once")
    }

    @Test("a shut-down client refuses the request on arrival")
    func shutDown() {
        var machine = Machine(request: Self.request())
        #expect(Self.did(machine.arrived(isShutDown: true)) == .fail(.client(.shutDown), .nothing))
    }

    @Test("after the response has ended, nothing more ends the exchange")
    func endsOnce() {
        var machine = Self.written()
        _ = machine.receivedHead(Self.head(.ok))
        _ = machine.receivedEnd()
        #expect(Self.did(machine.receivedBodyPart(ByteBuffer(string: "late"))) == .nothing)
        #expect(Self.did(machine.receivedEnd()) == .nothing)
        #expect(Self.did(machine.errorCaught(ConnectionReset())) == .nothing)
        #expect(Self.did(machine.connectionClosed(firstError: nil)) == .nothing)
        #expect(Self.did(machine.timedOut()) == .nothing)
        #expect(Self.did(machine.cancelled()) == .nothing)
    }
}
