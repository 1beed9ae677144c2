import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import LogShip

/// A sender's own crash claims, weighed against its budget: the token bucket with a manual clock.
@Suite("Crash budget")
struct CrashBudgetTests {
    let start = ContinuousClock.now

    /// How many of `count` claims by `uid`, `seconds` after the start, `budget` admits.
    func admitted(_ count: Int, uid: UInt32 = 1000, at seconds: Double, _ budget: inout CrashBudget) -> Int {
        (0..<count).count { _ in budget.admit(uid: uid, now: start + .seconds(seconds)) }
    }

    @Test("a user may claim its burst at once, then regains per_second claims a second, never more than the burst")
    func burstAndRefill() {
        var budget = CrashBudget(.init(perSecond: 10, burst: 100))
        #expect(admitted(101, at: 0, &budget) == 100, "the 101st claim at once is beyond the burst")
        #expect(admitted(1, at: 0.05, &budget) == 0, "half a claim regained is none")
        #expect(admitted(2, at: 0.1, &budget) == 1, "a tenth of a second regains one claim")
        #expect(admitted(200, at: 3600, &budget) == 100, "an hour of quiet restores the burst, no more")
    }

    @Test("each user has a budget of its own, and root's claims are never counted")
    func perUser() {
        var budget = CrashBudget(.init(perSecond: 0, burst: 2))
        #expect(admitted(3, uid: 1000, at: 0, &budget) == 2)
        #expect(admitted(2, uid: 65534, at: 0, &budget) == 2, "another user's flood takes nothing from this one")
        #expect(admitted(10_000, uid: 0, at: 0, &budget) == 10_000)
    }

    @Test("a burst of 0 admits no claim at all; a reloaded budget keeps what each user has spent")
    func settings() {
        var none = CrashBudget(.init(perSecond: 5, burst: 0))
        #expect(admitted(1, at: 0, &none) + admitted(1, at: 10, &none) == 0)
        var budget = CrashBudget(.init(perSecond: 0, burst: 3))
        #expect(admitted(3, at: 0, &budget) == 3)
        budget.settings = .init(perSecond: 0, burst: 50)
        #expect(admitted(1, at: 1, &budget) == 0, "spent claims stay spent")
    }

    @Test("a claim beyond the budget keeps its content, is an error and says it was demoted")
    func demotion() {
        let record = LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: 1), priority: .crash, severity: .critical, host: "h",
            source: .socket, message: "segfault", peer: PeerCredentials(pid: 7, uid: 1000, gid: 1000, comm: "w"),
            fields: ["k": "v"])
        let demoted = EncodedRecord(record).demotingCrashClaim()
        var expected = record
        expected.priority = .error
        expected.fields["demoted_from"] = "crash"
        #expect(demoted == EncodedRecord(expected))
        #expect(demoted.priority == .error && demoted.crashClaim == nil)
        let info = EncodedRecord(priority: .info, line: Array("{}".utf8), truncated: false)
        #expect(info.demotingCrashClaim() == info, "a record that claims no crash is left alone")
    }
}

/// What one read may cost: blank frames dropped, hand-overs bounded.
@Suite("Intake bounds")
struct IntakeBoundsTests {
    @Test("a frame of whitespace, line endings and NULs is blank; one with any other byte is not")
    func blankFrames() {
        #expect(Frame(bytes: []).isBlank)
        #expect(Frame(bytes: Array(" \t\r\n\u{0B}\u{0C}\u{0}".utf8)).isBlank)
        #expect(!Frame(bytes: Array("  x ".utf8)).isBlank)
        #expect(!Frame(bytes: [0xC2, 0xA0]).isBlank, "a no-break space is text")
    }

    @Test(
        "one read of 9 000 frames, a third of them blank, is handed on in parts of at most 1 024, blanks only counted"
    )
    func batching() throws {
        let channel = EmbeddedChannel(handler: FrameBatcher())
        for index in 0..<9_000 {
            channel.pipeline.fireChannelRead(
                Frame(bytes: index % 3 == 0 ? Array("  ".utf8) : Array("line \(index)".utf8)))
        }
        channel.pipeline.fireChannelReadComplete()
        var reads: [FrameRead] = []
        while let read = try channel.readInbound(as: FrameRead.self) { reads.append(read) }
        #expect(reads.map(\.frames.count) == [1_024, 1_024, 1_024, 1_024, 1_024, 880])
        #expect(reads.reduce(0) { $0 + $1.blank } == 3_000)
        let lines = reads.flatMap(\.frames).map { String(decoding: $0.bytes, as: UTF8.self) }
        #expect(lines == (0..<9_000).filter { $0 % 3 != 0 }.map { "line \($0)" }, "in order, none lost")
        _ = try channel.finish()
    }
}
