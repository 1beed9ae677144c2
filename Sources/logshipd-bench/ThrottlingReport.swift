import Foundation

/// The "Throttling" section of BENCHMARKS.md (issue 30, points 5 and 6): one host under a byte budget, and a
/// fleet after an outage beside syslog-ng. Each subsection is written by its own measurement, at the issue's sizes
/// only.
enum ThrottlingReport {
    static let section = "Throttling"
    static let oneHost = "One host: a 1 MB/s budget and a 100 MB backlog"
    static let fleet = "A fleet after an outage: 50 shippers, one receiver taking 20 000 lines/s"

    /// Both, as `make bench` runs them.
    static func runAll() async throws {
        try await runOneHost()
        print("")
        try await runFleet(FleetBench.Setup())
    }

    static func runOneHost(records: Int = ThrottleBench.records) async throws {
        let machine = machine()
        print(
            "one host: budget \(ThrottleBench.budget) bytes/s, \(records) records, receiver answering after 50 ms, "
                + "a crash record every 200 ms:")
        let rows = ThrottleBench.rows(try await ThrottleBench.run(records: records))
        for row in rows { print("  " + row) }
        guard records == ThrottleBench.records else {
            print("  (not written to BENCHMARKS.md: not the issue's backlog)")
            return
        }
        try write(oneHost, """
            Written by `logshipd-bench throttle` (release build; `make bench` runs it too) on \(machine).

            The release logshipd with `upload.rate.bytes_per_second: \(ThrottleBench.budget)` (`burst_seconds: 1`), its
            durable spool, batches of up to 1 000 records, two requests in flight. \(grouped(records)) records of about
            80 bytes as written (NDJSON as uploaded, with the record's id: the drain's row gives their bytes) go to its
            stream socket while uploads are paused (`logctl pause`), then uploads resume. The receiver (loopback,
            answering after 50 ms) notes when each request's body arrived and its size. A crash record is sent every 200
            ms from the resume on, as `logctl send --priority crash` sends it, timed from the send returning (the record
            is committed) to the arrival of its request. After the pause the bucket held `burst_seconds` of the budget,
            which the first requests spend on top of the budget's share (the issue allows it): each carries a full batch
            while the budget's pace would give it a quarter of a second's worth, until the burst is spent. That opening
            is shown apart; the windows run from its end (the first request no larger than the median) to the backlog's
            last request. A deviation is the window's bytes against the budget's share of the window. Requests are whole
            (a quarter of a second of the budget each), so a window holds one request more or less depending on where it
            starts: ±12.5% in 2 s, ±2.5% in 10 s.

            \(rows.joined(separator: "\n"))
            """)
    }

    static func runFleet(_ setup: FleetBench.Setup, peer runsPeer: Bool = true) async throws {
        let machine = machine()
        print(
            "fleet: \(setup.senders) shippers × \(setup.backlog) records, "
                + "receiver at \(Int(setup.linesPerSecond)) lines/s with 429 above, back after \(setup.outage):")
        let ours = try await FleetBench.runLogshipd(setup)
        let peer = runsPeer ? try await FleetBench.runSyslogNG(setup) : nil
        let rows = FleetBench.rows(ours, peer)
        for row in rows { print("  " + row) }
        guard setup.isTheIssues && runsPeer else {
            print("  (not written to BENCHMARKS.md: not the issue's fleet)")
            return
        }
        try write(fleet, """
            Written by `logshipd-bench fleet` (release build; `make bench` runs it too) on \(machine).

            \(setup.senders) release logshipd daemons, \
            each with its own SQLite spool and sockets in a directory of its own,
            no byte budget (the receiver's 429s set each one's rate, from unlimited), `upload.retry_max:
            \(setup.retryMax)s` (a fleet's choice: \
            with equal jitter each host's first request after the return comes within
            that long, inside the issue's ten seconds of convergence; the packaged 30 s spreads them over 30 s and
            `logshipd-bench fleet --retry-max 30` shows it), batches of up to 1 000 records, two requests in flight. \
            Each is written \(grouped(setup.backlog)) records
            (the comparison's generator, about 120 bytes a line) while the receiver's port refuses connections; \
            \(Int(setup.outage.seconds)) s after
            the last backlog is spooled the receiver binds the port. \
            It takes \(grouped(Int(setup.linesPerSecond))) lines a second: a
            token bucket of lines holding a second's worth, each request judged whole, and one whose lines are not all
            in the bucket answered 429 without `Retry-After` (its lines do not count). The first shipper is sent a
            crash record every 200 ms from the return on (logshipd: through its control socket, timed from the send
            returning, so that an upload that starts before the answer reaches the sender shows as 0 or a fraction
            below; syslog-ng: a line on its socket), timed to the arrival of a request that was taken; until a shipper
            has been answered again it is still pausing, and a crash record waits for its probe (about a second). Times
            run from the return; the ideal drain is all lines at the receiver's rate (\(Int(setup.ideal)) s).

            syslog-ng 3.38 beside it, the same way: \
            \(setup.senders) instances of `bench/syslog-ng-http-throttle.conf`, `http()`
            with two workers and `throttle()` per worker at half of an instance's share \
            (\(Int(setup.linesPerSecond) / setup.senders) lines/s each,
            \(grouped(Int(setup.linesPerSecond))) in all), a disk buffer, \
            and `time-reopen(\(setup.retryMax))` as logshipd's `retry_max`; it
            takes a 429 like a refused connection (the batch stays queued, the worker waits `time-reopen()`), and its
            crash records are lines like any other.

            \(rows.joined(separator: "\n"))
            """)
    }

    private static func write(_ subsection: String, _ text: String) throws {
        try BenchmarkReport.write(
            subsection: subsection, of: section, order: [oneHost, fleet],
            introduction: """
                The upload budget of issue 30 (`upload.rate.*`): points 6 (one host) and 5 (a fleet) of the issue. The
                machine is shared and noisy: figures move from run to run; the ratios and the shapes hold better.
                """, text)
    }

    /// `20 000`: digits in groups of three, as the issue writes them.
    static func grouped(_ number: Int) -> String {
        let digits = Array(String(number))
        return stride(from: digits.count, to: 0, by: -3).reversed()
            .map { String(digits[max(0, $0 - 3)..<$0]) }.joined(separator: " ")
    }

    /// The machine and the date, and how busy it was before the measurement started.
    static func machine() -> String {
        let (model, load) = (BenchmarkReport.cpuModel(), BenchmarkReport.loadAverage())
        return "\(ISO8601DateFormatter().string(from: Date())), \(ProcessInfo.processInfo.activeProcessorCount) cores, "
            + "\(model), \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, load average \(load) before it started"
    }
}
