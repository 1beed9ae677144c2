import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// The control socket: `logctl send` and `logctl status`.
///
/// `send` is answered only after the records are accepted by the spool, so a zero exit from `logctl send` means
/// the daemon has them.
public struct ControlServer: Service {
    /// Control connections only root and logshipd's own user may take, however many other users hold.
    static let operatorReserve = 4

    private let listener: UnixStreamListener
    private let intake: RecordIntake
    private let shipper: Shipper
    private let spool: any Spool & DeadLetterStore
    private let statusSource: DaemonStatusSource
    private let hostname: String
    private let maximumRecordBytes: Int
    private let logger: Logger

    /// Binds the control socket.
    ///
    /// - Parameters:
    ///   - passed: The socket systemd holds for `path` (socket activation), to use instead of binding.
    ///   - limits: How many connections are served at once (`ingest.max_connections`).
    ///   - refusals: Where refused connections are counted.
    /// - Throws: ``IngestError`` when the path is held by a live process or cannot be bound.
    static func bind(
        path: String,
        passed: Int32?,
        mode: UInt32,
        maximumRecordBytes: Int,
        limits: UnixStreamListener.Limits,
        hostname: String,
        intake: RecordIntake,
        shipper: Shipper,
        spool: any Spool & DeadLetterStore,
        statusSource: DaemonStatusSource,
        refusals: ConnectionRefusals,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws -> ControlServer {
        let listener = try UnixStreamListener.bind(
            path: path, passed: passed, mode: mode, maximumFrameBytes: ControlProtocol.maximumRequestBytes,
            limits: limits,
            greeting: Array((ControlProtocol.greeting + "\n").utf8),
            refusal: Array((ControlProtocol.refusal(
                "too many control connections are open (ingest.max_connections \(limits.maximum), "
                    + "ingest.max_connections_per_user \(limits.maximumPerUser) per user); "
                    + "try again when some have closed") + "\n").utf8),
            refusals: refusals,
            group: group,
            logger: logger)
        return ControlServer(
            listener: listener, intake: intake, shipper: shipper, spool: spool,
            statusSource: statusSource, hostname: hostname,
            maximumRecordBytes: maximumRecordBytes, logger: logger)
    }

    /// Serves requests until graceful shutdown.
    public func run() async throws {
        logger.info("control socket listening", metadata: ["logship.socket": "\(listener.path)"])
        try await listener.serveUntilGracefulShutdown { connection, peer in
            await serve(connection, peer: peer)
        }
    }

    private func serve(_ connection: UnixStreamListener.Connection, peer: PeerCredentials) async {
        do {
            try await connection.executeThenClose { reads, responses in
                for try await read in reads {
                    for frame in read.frames {
                        let response = await respond(to: frame, peer: peer)
                        var line = try JSONEncoder().encode(response)
                        line.append(UInt8(ascii: "\n"))
                        try await responses.write(ByteBuffer(bytes: line))
                    }
                }
            }
        } catch is CancellationError {
        } catch {
            logger.debug("control connection ended", metadata: ["logship.error": "\(error)"])
        }
    }

    private func respond(to frame: Frame, peer: PeerCredentials) async -> ControlResponse {
        if frame.truncated {
            return .failure(
                "request larger than the control socket's limit of "
                    + "\(ConfigurationText.bytes(ControlProtocol.maximumRequestBytes)); "
                    + "send fewer or shorter records at a time")
        }
        let request: ControlRequest
        do {
            request = try JSONDecoder().decode(ControlRequest.self, from: Data(frame.bytes))
        } catch {
            return .failure("malformed request: \(error)")
        }
        switch request.command {
        case .send:
            return await send(request.records ?? [], peer: peer)
        case .status:
            return ControlResponse(ok: true, status: await statusSource.status())
        case .deadLetters:
            // Dead letters are other users' records, refused by the remote: not for every member of the group.
            if let refusal = refusal(of: request.command, to: peer) { return refusal }
            let limit = request.limit ?? 100
            guard ControlRequest.deadLetterLimits.contains(limit) else {
                return .failure(
                    "limit \(limit) is out of range: list \(ControlRequest.deadLetterLimits.lowerBound) to "
                        + "\(ControlRequest.deadLetterLimits.upperBound) dead letters at a time")
            }
            do {
                return ControlResponse(ok: true, deadLetters: try await spool.deadLetters(limit: limit))
            } catch {
                return .failure("cannot read dead letters: \(error)")
            }
        case .pause, .resume:
            if let refusal = refusal(of: request.command, to: peer) { return refusal }
            let changed = shipper.setPausedByOperator(request.command == .pause)
            if changed {
                logger.notice(
                    request.command == .pause ? "uploads paused by an operator" : "uploads resumed by an operator",
                    metadata: ["logship.peer.uid": "\(peer.uid)", "logship.peer.pid": "\(peer.pid)"])
            }
            return ControlResponse(ok: true, changed: changed)
        case .flush:
            return await flush(request)
        case .throttle:
            if let refusal = refusal(of: request.command, to: peer) { return refusal }
            guard let bytesPerSecond = request.bytesPerSecond else {
                return .failure("throttle needs a budget in bytes per second, or 0 for none")
            }
            return throttle(to: bytesPerSecond, peer: peer)
        case .requeue, .purge:
            if let refusal = refusal(of: request.command, to: peer) { return refusal }
            guard let selection = Self.selection(request) else {
                return .failure("name dead letter ids, or all")
            }
            if case .ids(let ids) = selection, ids.count > ControlRequest.deadLetterLimits.upperBound {
                return .failure(
                    "\(ids.count) ids in one request; "
                        + "name at most \(ControlRequest.deadLetterLimits.upperBound), or all")
            }
            do {
                let count = request.command == .requeue
                    ? try await spool.requeueDeadLetters(selection) : try await spool.purgeDeadLetters(selection)
                logger.notice(
                    "dead letters \(request.command.rawValue)d",
                    metadata: ["logship.dead_letters": "\(count)", "logship.peer.uid": "\(peer.uid)"])
                return ControlResponse(ok: true, count: count)
            } catch let error as UnknownDeadLetters {
                return .failure("\(error); nothing was \(request.command.rawValue)d")
            } catch {
                return .failure("cannot \(request.command.rawValue) dead letters: \(error)")
            }
        }
    }

    /// Commands that change what the daemon does, and the dead letters (other users' records), are for root and
    /// logshipd's own user; `send`, `status` and `flush` are for whoever may use the socket (its group).
    private func refusal(of command: ControlRequest.Command, to peer: PeerCredentials) -> ControlResponse? {
        let own = getuid()
        guard peer.uid != 0 && peer.uid != own else { return nil }
        return .failure("\(command.rawValue) needs root or logshipd's own user (uid \(own)); you are uid \(peer.uid)")
    }

    /// Puts an operator's byte budget in place of the configured one, until the next reload; one that could not
    /// let the largest record through is refused, as `--check-config` refuses it.
    private func throttle(to bytesPerSecond: Int, peer: PeerCredentials) -> ControlResponse {
        guard bytesPerSecond >= 0 else { return .failure("a budget of \(bytesPerSecond) bytes per second is negative") }
        let override: ThrottleOverride = bytesPerSecond == 0 ? .off : .bytesPerSecond(bytesPerSecond)
        if case .bytesPerSecond(let rate) = override {
            var budget = shipper.budget
            budget.bytesPerSecond = rate
            budget.minimumBytesPerSecond = min(budget.minimumBytesPerSecond, rate)
            let problems = ConfigurationLoader.uploadRateProblems(budget, maxRecordBytes: maximumRecordBytes)
            if let problem = problems.first { return .failure(problem) }
        }
        shipper.setThrottleOverride(override)
        logger.notice(
            "upload budget set by an operator until the next reload",
            metadata: [
                "logship.upload.rate": "\(bytesPerSecond == 0 ? "none" : ByteRateText.format(bytesPerSecond))",
                "logship.peer.uid": "\(peer.uid)",
            ])
        return ControlResponse(ok: true)
    }

    /// Waits, polling the spool, until the records of the asked classes accepted before now have left it.
    private func flush(_ request: ControlRequest) async -> ControlResponse {
        let least = request.priority.map { PriorityClass.resolve($0)?.0 }
        guard let leastClass = least ?? .debug else {
            return .failure("unknown priority \"\(request.priority ?? "")\"")
        }
        let classes = Set(PriorityClass.allCases.filter { $0 >= leastClass })
        let deadline = ContinuousClock.now + .seconds(max(0, min(request.timeout ?? 30, 86_400)))
        do {
            let upTo = try await spool.arrivalMark()
            while true {
                let held = try await spool.heldRecords(upTo: upTo, in: classes)
                if held == 0 { return ControlResponse(ok: true, count: 0) }
                guard ContinuousClock.now < deadline else {
                    return ControlResponse(
                        ok: false,
                        error: "flush timed out: \(held) record(s) of \(leastClass) and above accepted before it are "
                            + "still in the spool; \(shipper.statistics.remoteState)",
                        count: held)
                }
                try await Task.sleep(for: .milliseconds(100))  // polling the spool until it has let them go
            }
        } catch {
            return .failure("flush failed: \(error)")
        }
    }

    private static func selection(_ request: ControlRequest) -> DeadLetterSelection? {
        if request.all == true { return .all }
        guard let ids = request.ids, !ids.isEmpty else { return nil }
        return .ids(ids)
    }

    private func send(_ submissions: [Submission], peer: PeerCredentials) async -> ControlResponse {
        let receivedAt = Timestamp.now()
        let reader = SubmissionReader(hostname: hostname, maximumRecordBytes: maximumRecordBytes)
        var records: [LogRecord] = []
        records.reserveCapacity(submissions.count)
        for (index, submission) in submissions.enumerated() {
            switch reader.record(from: submission, peer: peer, receivedAt: receivedAt) {
            case .success(let record): records.append(record)
            case .failure(let reason): return .failure("record \(index + 1) rejected: \(reason)")
            }
        }
        do {
            let (receipt, demoted) = try await intake.append(records, from: peer)
            if receipt.refused > 0 {
                let reason = receipt.refusal.map { "\($0)" } ?? "no room in the spool"
                return ControlResponse(
                    ok: false, accepted: receipt.accepted, error: "\(reason): \(receipt.refused) record(s) refused")
            }
            return ControlResponse(ok: true, accepted: receipt.accepted, demoted: demoted > 0 ? demoted : nil)
        } catch {
            logger.error("records from logctl not accepted", metadata: ["logship.error": "\(error)"])
            return .failure("not accepted: \(error)")
        }
    }
}
