import Logging
import Synchronization

/// Says in the log what the spool does for want of room, as summaries: the first eviction or refusal after a
/// quiet spell at once, then what followed it once per ``interval`` while it goes on ("evicted 200080 info
/// record(s) in the last 10s: the disk is below what the spool leaves free (spool.min_free_disk)").
final class SpoolRoomReports: Sendable {
    /// What happened for want of room: records evicted per cause and class, records refused per reason.
    struct Tally: Sendable {
        var evicted: [Cause: [PriorityClass: Int]] = [:]
        var refused: [SpoolRefusal: Int] = [:]

        var isEmpty: Bool { evicted.isEmpty && refused.isEmpty }

        /// Adds `other`; refusals for one reason are counted under the latest's numbers (the free space a disk
        /// refusal names changes with every commit), so that a summary says each reason once.
        mutating func add(_ other: Tally) {
            for (cause, classes) in other.evicted {
                evicted[cause, default: [:]].merge(classes, uniquingKeysWith: +)
            }
            for (refusal, count) in other.refused {
                let earlier = refused.first { $0.key.isSameReason(as: refusal) }
                if let earlier { refused[earlier.key] = nil }
                refused[refusal, default: 0] += count + (earlier?.value ?? 0)
            }
        }
    }

    /// What made an eviction necessary.
    enum Cause: Hashable, Sendable {
        /// The spool reached `spool.max_bytes`.
        case budget
        /// The disk reached what the spool leaves free.
        case disk
    }

    static let interval = Duration.seconds(10)

    private struct Window {
        var tally = Tally()
        var isOpen = false
    }

    private let window = Mutex(Window())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Reports `tally`: at once after a quiet spell, else with the rest of the current interval.
    func note(_ tally: Tally) {
        guard !tally.isEmpty else { return }
        let opened = window.withLock { window in
            if window.isOpen {
                window.tally.add(tally)
                return false
            }
            window.isOpen = true
            return true
        }
        guard opened else { return }
        log(tally, over: nil)
        closeWindowLater()
    }

    /// Ends the interval: logs what it gathered and opens the next, or ends the spell when it gathered nothing.
    private func closeWindowLater() {
        Task {
            try? await Task.sleep(for: Self.interval)
            let gathered = window.withLock { window -> Tally? in
                guard !window.tally.isEmpty else {
                    window.isOpen = false
                    return nil
                }
                defer { window.tally = Tally() }
                return window.tally
            }
            guard let gathered else { return }
            log(gathered, over: Self.interval)
            closeWindowLater()
        }
    }

    private func log(_ tally: Tally, over interval: Duration?) {
        let when = interval.map { " in the last \(ConfigurationText.duration($0))" } ?? ""
        for (cause, classes) in tally.evicted.sorted(by: { $0.key == .disk && $1.key != .disk }) {
            let counts = PriorityClass.mostUrgentFirst.reversed().compactMap { priority in
                classes[priority].map { "\($0) \(priority)" }
            }.joined(separator: ", ")
            let reason = switch cause {
            case .disk: "the disk is below what the spool leaves free (spool.min_free_disk)"
            case .budget: "the spool is at spool.max_bytes"
            }
            logger.warning("evicted \(counts) record(s)\(when): \(reason)")
        }
        for (refusal, count) in tally.refused {
            logger.error("refused \(count) record(s)\(when): \(refusal)")
        }
    }
}
