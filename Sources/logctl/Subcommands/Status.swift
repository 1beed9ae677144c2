import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LogShipClient

/// `logctl status`: what the daemon holds, has done, and is doing, at a glance (or as JSON for scripts).
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what logshipd holds, has delivered, and is doing.")

    @OptionGroup var control: ControlSocketOptions

    @Flag(name: .long, help: "Print the same values as one JSON object.")
    var json = false

    func run() throws {
        let response = request(ControlRequest(command: .status), at: control.path)
        guard let status = response.status else { fail("no status in the response") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(status), as: UTF8.self))
            return
        }
        print(Self.render(status))
    }

    /// The table; every text the daemon relays from elsewhere (a remote's answer, a journal cursor) with its
    /// control characters escaped.
    static func render(_ status: DaemonStatus) -> String {
        let text: (String) -> String = TerminalText.escaped
        var lines = ["logshipd \(text(status.version)), up \(duration(status.uptimeSeconds))", ""]
        lines.append("class      pending   oldest   waited for budget")
        for priority in PriorityClass.mostUrgentFirst {
            let name = priority.description
            let age = status.oldestPendingAgeSeconds[name].map(duration) ?? "-"
            let waited = status.throttledSeconds[name].map(duration) ?? "-"
            lines.append(name.rightPadded(to: 9) + String(status.pending[name] ?? 0).leftPadded(to: 9) + "   "
                + age.rightPadded(to: 9) + waited)
        }
        lines.append("")
        lines.append("in flight     \(status.inFlight) request(s), \(status.claimed) record(s)")
        lines.append("delivered     \(status.delivered) record(s) in \(status.requests) request(s)")
        lines.append("failed        \(status.failedRequests) request(s): \(status.retriedRequests) retried whole, "
            + "\(status.rejectedRequests) rejected for their records")
        lines.append(
            "dead letters  \(status.deadLetters) record(s) held, \(status.deadLettered) dead-lettered since start")
        lines.append(
            "received      \(status.received) (truncated \(status.truncated)); "
                + "evicted \(status.evicted), refused \(status.refused)")
        lines.append(
            "dropped       \(status.blank) blank frame(s); "
                + "\(status.demoted) crash claim(s) over budget stored as errors")
        if !status.refusedConnections.isEmpty {
            let reasons = status.refusedConnections.sorted { $0.key < $1.key }.map { key, count in
                "\(count) \(ConnectionRefusal(rawValue: key).map(String.init(describing:)) ?? text(key))"
            }
            lines.append("connections   refused \(reasons.joined(separator: "; "))")
        }
        let waiting = status.waitingForRoom > 0
            ? "; \(status.waitingForRoom) record(s) from the sockets wait for room (the sockets are not read)" : ""
        lines.append("spool         \(bytes(status.spoolBytes)) of \(bytes(status.spoolBudget))\(waiting)")
        lines += disk(status)
        lines.append("upload rate   \(rate(status))")
        if status.quarantinedChunks > 0 {
            lines.append("damaged       \(status.quarantinedChunks) spool chunk(s) quarantined: "
                + "\(status.quarantinedRecords - status.unreadableRecords) record(s) to dead letters, "
                + "\(status.unreadableRecords) unreadable")
        }
        if let setAside = status.spoolSetAside {
            let reason = text(status.spoolSetAsideReason ?? "damaged")
            lines.append("spool file    set aside as \(text(setAside)) (\(reason)); a fresh spool was started")
        }
        if status.operatorPaused {
            lines.append("uploads       paused by an operator (logctl resume restarts them)")
        }
        if let pausedUntil = status.pausedUntil {
            lines.append(
                "remote        paused until \(text(pausedUntil)): "
                    + "\(text(status.pauseCause ?? "remote failed")) (\(text(status.lastFailure ?? "?")))")
        } else if let lastFailure = status.lastFailure {
            lines.append("remote        retrying after \(text(lastFailure))")
        } else if status.rateHeldDownByReceiver {
            lines.append("remote        accepting, slowed down: it answered 429/503 to more (see upload rate)")
        } else {
            lines.append("remote        accepting")
        }
        if status.endpoints.count > 1 {
            lines += endpoints(status)
        }
        if let lastError = status.lastError {
            lines.append("last error    \(text(lastError))")
            lines.append("              at \(when(status.lastErrorAt))" + (status.lastErrorPast
                ? "; past: the remote has accepted requests since, last at \(when(status.lastAcceptedAt))"
                : "; no request accepted since"))
        }
        if let journal = status.journal {
            let behind = journal.behindSeconds.map { ", \(duration($0)) behind the newest entry" } ?? ""
            lines.append("journal       \(text(journal.state)); read \(journal.read) (\(journal.filtered) left out)"
                + "; saved position \(text(journal.position ?? "none"))\(behind)")
        }
        return lines.joined(separator: "\n")
    }

    /// Each endpoint of `upload.url` on a line, in order of preference: `endpoints     1. https://a.example/ingest:
    /// resting after cannot connect …; probed from 2026-11-25T10:00:30Z when records wait; 10 delivered in 2
    /// request(s), 1 failed`.
    static func endpoints(_ status: DaemonStatus) -> [String] {
        status.endpoints.enumerated().map { index, endpoint in
            let state: String
            if endpoint.active {
                state = "active"
            } else if let until = endpoint.restsUntil {
                let failure = TerminalText.escaped(endpoint.failure ?? "a failure")
                state = "resting after \(failure); probed from \(TerminalText.escaped(until)) when records wait"
            } else {
                state = "standby"
            }
            return (index == 0 ? "endpoints     " : "              ")
                + "\(index + 1). \(TerminalText.escaped(endpoint.url)): \(state); \(endpoint.delivered) delivered in "
                + "\(endpoint.requests) request(s), \(endpoint.failedRequests) failed"
        }
    }

    /// The spool's filesystem, what the spool leaves free there, and what it evicted and refused for want of it:
    /// `disk          5.1 MiB free of 8.0 MiB; the spool leaves 2.0 MiB free (spool.min_free_disk)`.
    static func disk(_ status: DaemonStatus) -> [String] {
        guard let free = status.spoolDiskFree, let size = status.spoolDiskSize,
            let minimum = status.spoolDiskMinimumFree
        else { return [] }
        var line = "disk          \(bytes(free)) free of \(bytes(size)); the spool leaves \(bytes(minimum)) free"
        if let configured = status.spoolDiskMinimumFreeConfigured, configured > minimum {
            line += " (spool.min_free_disk is \(bytes(configured)), more than this filesystem can spare)"
        } else {
            line += " (spool.min_free_disk)"
        }
        if status.spoolDiskReserve == 0 { line += "; its reserve is given to the full disk" }
        var lines = [line]
        if status.evictedForDisk + status.refusedForDisk > 0 {
            lines.append("              short of room: \(status.evictedForDisk) record(s) evicted, "
                + "\(status.refusedForDisk) refused since start, the last at \(when(status.lastDiskShortageAt))")
        }
        return lines
    }

    /// The budget and the rate in force: `unlimited`, `1.0 MiB/s (configured)`, `256 KiB/s of 1.0 MiB/s: the
    /// receiver is overloaded`.
    static func rate(_ status: DaemonStatus) -> String {
        let source = status.rateBudgetByOperator ? "set by logctl throttle until the next reload" : "configured"
        var line: String
        switch (status.rateEffective, status.rateBudget) {
        case (nil, _): line = status.rateBudgetByOperator ? "unlimited (\(source))" : "unlimited"
        case (let effective?, let budget?) where effective == budget:
            line = "\(ByteRateText.format(budget)) (\(source))"
        case (let effective?, let budget?):
            line = "\(ByteRateText.format(effective)) of \(ByteRateText.format(budget)) (\(source))"
        case (let effective?, nil): line = ByteRateText.format(effective)
        }
        if status.rateHeldDownByReceiver {
            line += ": the receiver is overloaded (429/503), the rate recovers a step a second"
        }
        if let requests = status.rateRequestsPerSecond {
            line += "; at most \(ConfigurationText.number(requests)) request(s) a second"
        }
        return line
    }

    /// An RFC 3339 time from the daemon, with how long ago it was: `2026-11-25T10:00:00.000000Z (12s ago)`.
    static func when(_ time: String?) -> String {
        guard let time, let timestamp = Timestamp(rfc3339: time) else { return TerminalText.escaped(time ?? "?") }
        let ago = Double(Timestamp.now().microsecondsSinceEpoch - timestamp.microsecondsSinceEpoch) / 1e6
        return "\(time) (\(duration(max(0, ago))) ago)"
    }

    /// `12s`, `3m05s`, `2h07m`.
    static func duration(_ seconds: Double) -> String {
        // Rounded as printf's %.0f rounded them before: to the nearest, halves to even.
        let whole = { (value: Double) in Int(value.rounded(.toNearestOrEven)) }
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        switch seconds {
        case ..<60: return "\(whole(seconds))s"
        case ..<3600:
            return "\(Int(seconds / 60))m" + twoDigits(whole(seconds.truncatingRemainder(dividingBy: 60))) + "s"
        default:
            return "\(Int(seconds / 3600))h" + twoDigits(Int((seconds / 60).truncatingRemainder(dividingBy: 60))) + "m"
        }
    }

    static func bytes(_ count: Int) -> String {
        ByteCountText.approximate(count)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: " ", count: max(0, width - count)) + self
    }

    fileprivate func rightPadded(to width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }
}
