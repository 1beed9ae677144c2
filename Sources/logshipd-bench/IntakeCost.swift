import LogShip
import LogShipRecord
import NIOCore

/// What one socket line costs before it reaches the spool, on one thread: framing, parsing and encoding, in
/// reads of about 64 KiB as a busy socket delivers them. `logshipd-bench intake-cost` prints it; under
/// `valgrind --tool=callgrind` the instruction count per line is the figure that holds on a noisy machine.
enum IntakeCost {
    static func run(lines count: Int = 200_000) {
        var reads: [ByteBuffer] = []
        var read = ByteBuffer()
        for index in 0..<count {
            read.writeString(
                "<14>Nov 22 10:00:00 web-17 nginx[4242]: GET /api/v1/orders/\(index) 200 12ms "
                    + "user=u\(index % 500) agent=curl/8.5.0\n")
            if read.readableBytes > 65_000 || index == count - 1 {
                reads.append(read)
                read = ByteBuffer()
            }
        }
        let parser = RecordParser(hostname: "bench")
        let peer = PeerCredentials(pid: 4242, uid: 33, gid: 33, comm: "nginx")
        let receivedAt = Timestamp(microsecondsSinceEpoch: 1_795_255_200_000_000)
        var decoder = StreamFrameDecoder(maximumRecordBytes: 65_536)
        var bytes = 0
        let start = Benchmark.threadCPUTime()
        for var read in reads {
            var entries: [SpoolEntry] = []
            while let frame = decoder.nextFrame(&read, atEnd: false) {
                entries.append(SpoolEntry(parser.encode(frame, source: .socket, peer: peer, receivedAt: receivedAt)))
            }
            bytes += entries.reduce(0) { $0 + $1.line.count }
        }
        let seconds = Benchmark.threadCPUTime() - start
        print("intake, \(count) RFC 3164 lines in reads of 64 KiB: "
            + "\(Int(seconds / Double(count) * 1e9)) ns CPU per line, \(bytes / count) bytes of NDJSON per line")
    }
}
