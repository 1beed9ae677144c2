#if canImport(Glibc)
import Glibc
#endif
import Logging
import LogShipLogging

// Logs COUNT records through LogShipLogging to SOCKET (logshipd's datagram ingest socket), every 1000th a crash
// report, each with its index as metadata; then waits up to 60 s for the buffer to empty and prints one line:
// `sent=… dropped=… waiting=… slowest_call_us=… calls_over_50ms=…`: the longest time one logging call took,
// and how many took 50 ms or more.
// With PAUSE_AT it stops after that many records, says `paused` on stderr, and goes on at SIGUSR1 (so that a test
// can restart the daemon at a known point).
//
//     logship-logging-example /run/logshipd/ingest.dgram 10000 [PAUSE_AT]
let arguments = CommandLine.arguments
guard (3...4).contains(arguments.count), let count = Int(arguments[2]), count >= 0,
    arguments.count == 3 || Int(arguments[3]) != nil
else {
    let usage = "usage: logship-logging-example SOCKET COUNT [PAUSE_AT]\n"
    _ = usage.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
let pauseAt = arguments.count == 4 ? Int(arguments[3]) : nil
// Blocked from the start, so that a SIGUSR1 sent before the pause is waited for, not fatal.
var resume = sigset_t()
sigemptyset(&resume)
sigaddset(&resume, SIGUSR1)
pthread_sigmask(SIG_BLOCK, &resume, nil)
let sink = LogShipSink(socketPath: arguments[1])
LoggingSystem.bootstrap { LogShipLogHandler(label: $0, sink: sink) }
var logger = Logger(label: "example.orders")
logger[metadataKey: "service"] = "orders"

func microseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return time.tv_sec * 1_000_000 + time.tv_nsec / 1000
}

var slowest = 0
var callsOver50ms = 0
for index in 0..<count {
    if index == pauseAt {
        _ = "paused\n".withCString { write(2, $0, strlen($0)) }
        var received: Int32 = 0
        sigwait(&resume, &received)
    }
    let start = microseconds()
    if index % 1000 == 999 {
        logger.critical(
            "worker crashed at record \(index)",
            metadata: Logger.Metadata.crashReport.merging(["index": "\(index)"]) { $1 })
    } else {
        logger.info("order \(index) shipped", metadata: ["index": "\(index)"])
    }
    let took = microseconds() - start
    slowest = max(slowest, took)
    if took >= 50_000 { callsOver50ms += 1 }
    // At most about 4 000 records a second: a busy service, and a run long enough to restart the daemon in.
    if index % 4 == 3 { usleep(1000) }
}
_ = sink.flush(timeoutSeconds: 60)
let statistics = sink.currentStatistics
print(
    "sent=\(statistics.sent) dropped=\(statistics.dropped) waiting=\(statistics.waiting) "
        + "slowest_call_us=\(slowest) calls_over_50ms=\(callsOver50ms)")
