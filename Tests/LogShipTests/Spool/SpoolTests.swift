import Foundation
import GRDB
import Logging
import Synchronization
import Testing

import LogShipTestKit
@testable import LogShip

@Suite("Spools")
struct SpoolTests {
    let limits = BatchLimits(maxRecords: 100, maxBytes: 1 << 20)
    /// The accounted size of an `entry(_, _, padding: 98)` with a two-character text.
    let recordSize = 100 + SpoolEntry.overhead

    @Test("racing claims are numbered in the order they took their records", arguments: SpoolKind.allCases)
    func claimNumbers(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append((0..<400).map { entry(.info, "i\($0)") })
        let batches = try await withThrowingTaskGroup(of: Batch.self) { group in
            for _ in 0..<4 { group.addTask { try await claimBatch(spool, .info, maxRecords: 100) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let inClaimOrder = batches.sorted { $0.number < $1.number }
        #expect(inClaimOrder.map(\.number) == [1, 2, 3, 4])
        #expect(inClaimOrder.flatMap(messages) == (0..<400).map { "i\($0)" })
        let (first, second) = inClaimOrder[0].halves()
        #expect(first.number == 1 && second.number == 1, "halves keep their batch's number")
        await spool.close()
    }

    @Test("an input's position is committed with its records, and a group that would need evicting is left out whole",
          arguments: SpoolKind.allCases)
    func positions(_ kind: SpoolKind) async throws {
        let spool = try await kind.make(maximumBytes: 4 * recordSize)
        #expect(try await spool.savedPosition(of: "journal") == nil)
        let first = try await spool.append(
            [entry(.info, "j1", padding: 98)], position: InputPosition(input: "journal", cursor: "c1"), evicting: false)
        #expect(first == AppendReceipt(accepted: 1))
        #expect(try await spool.savedPosition(of: "journal") == "c1")
        _ = try await spool.append([entry(.debug, "d1", padding: 98), entry(.debug, "d2", padding: 98)])

        // Two more would need evicting a debug record: none is stored, and the position stays.
        let full = try await spool.append(
            [entry(.info, "j2", padding: 98), entry(.info, "j3", padding: 98)],
            position: InputPosition(input: "journal", cursor: "c3"), evicting: false)
        #expect(full == AppendReceipt(deferred: 2))
        #expect(try await spool.savedPosition(of: "journal") == "c1")
        #expect(await spool.statistics().pending[.debug] == 2, "nothing was evicted for them")

        let filtered = try await spool.append(
            [], position: InputPosition(input: "journal", cursor: "c4"), evicting: false)
        #expect(filtered == AppendReceipt(), "an empty group moves the position")
        #expect(try await spool.savedPosition(of: "journal") == "c4")
        await spool.close()
    }

    @Test("a saved position survives reopening the SQLite spool")
    func positionSurvives() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let spool = try await SpoolKind.sqlite.make(path: path)
        _ = try await spool.append(
            [entry(.info, "j")], position: InputPosition(input: "journal", cursor: "c9"), evicting: false)
        await spool.close()
        let reopened = try await SpoolKind.sqlite.make(path: path)
        #expect(try await reopened.savedPosition(of: "journal") == "c9")
        await reopened.close()
    }

    @Test("claims keep arrival order within a class and never mix classes", arguments: SpoolKind.allCases)
    func orderPerClass(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append([entry(.info, "i1"), entry(.crash, "c1"), entry(.info, "i2"), entry(.crash, "c2")])
        #expect(messages(try await claimBatch(spool, .crash)) == ["c1", "c2"])
        #expect(messages(try await claimBatch(spool, .info)) == ["i1", "i2"])
        #expect(try await spool.claim(.info, limits: limits) == .empty)
        #expect(await spool.pendingClasses().isEmpty)
        await spool.close()
    }

    @Test("a claim stops at the record and byte limits and says whether more is ready", arguments: SpoolKind.allCases)
    func limitsAndMoreReady(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append((0..<5).map { entry(.info, "r\($0)", padding: 98) })
        guard case .batch(let first, let more) = try await spool.claim(
            .info, limits: BatchLimits(maxRecords: 3, maxBytes: 1 << 20))
        else {
            Issue.record("expected a batch")
            return
        }
        #expect(first.records.count == 3 && more)
        guard case .batch(let second, let moreAfter) = try await spool.claim(
            .info, limits: BatchLimits(maxRecords: 10, maxBytes: 150))
        else {
            Issue.record("expected a batch")
            return
        }
        #expect(second.records.count == 1 && moreAfter, "each line is 101 bytes with its newline")
        await spool.close()
    }

    @Test("a batch put back goes before later records, ready at once", arguments: SpoolKind.allCases)
    func putBackKeepsOrder(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append((1...4).map { entry(.error, "e\($0)") })
        let first = try await claimBatch(spool, .error, maxRecords: 2)
        let (head, tail) = first.halves()
        try await spool.settle(tail, .putBack)
        let again = try await claimBatch(spool, .error, maxRecords: 2)
        #expect(messages(again) == ["e2", "e3"], "the record put back is ready and first")
        try await spool.settle(again, .putBack)
        try await spool.settle(head, .putBack)
        let statistics = await spool.statistics()
        #expect(statistics.pending[.error] == 4 && statistics.claimed == 0)
        #expect(messages(try await claimBatch(spool, .error, maxRecords: 4)) == ["e1", "e2", "e3", "e4"])
        await spool.close()
    }

    @Test("acknowledging frees the bytes", arguments: SpoolKind.allCases)
    func acknowledge(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append([entry(.warning, "w1"), entry(.warning, "w2")])
        let batch = try await claimBatch(spool, .warning)
        #expect(await spool.statistics().bytes == 2 * (2 + SpoolEntry.overhead))
        try await spool.acknowledge(batch)
        #expect(await spool.statistics().bytes == 0)
        #expect(try await spool.claim(.warning, limits: limits) == .empty)
        await spool.close()
    }

    @Test("a background acknowledgement keeps its records claimed until committed; closing waits for it")
    func backgroundAcknowledgement() async throws {
        let path = try "\(TemporaryDirectory.make())/spool.db"
        let spool = try await SpoolKind.sqlite.make(path: path)
        _ = try await spool.append((1...3).map { entry(.info, "i\($0)") })
        let first = try await claimBatch(spool, .info, maxRecords: 2)
        try await spool.settle(first, .delivered)
        #expect(messages(try await claimBatch(spool, .info)) == ["i3"], "acknowledged records are never claimed again")
        await spool.close()

        let reopened = try await SpoolKind.sqlite.make(path: path)
        #expect(messages(try await claimBatch(reopened, .info)) == ["i3"], "the delete was committed before closing")
        await reopened.close()
    }

    @Test("when full, the lowest class goes first, oldest first, and crash records are never evicted",
          arguments: SpoolKind.allCases)
    func eviction(_ kind: SpoolKind) async throws {
        let spool = try await kind.make(maximumBytes: 4 * recordSize)
        _ = try await spool.append([
            entry(.debug, "d1", padding: 98), entry(.info, "i1", padding: 98), entry(.debug, "d2", padding: 98),
            entry(.crash, "c1", padding: 98),
        ])
        let receipt = try await spool.append([entry(.error, "e1", padding: 98), entry(.crash, "c2", padding: 98)])
        #expect(receipt == AppendReceipt(accepted: 2, evicted: 2))
        #expect(messages(try await claimBatch(spool, .info)) == ["i1"])
        #expect(try await spool.claim(.debug, limits: limits) == .empty)

        let lower = try await spool.append([entry(.debug, "d3", padding: 98)])
        #expect(
            lower == AppendReceipt(refused: 1, refusal: .full(budget: 4 * recordSize)),
            "a debug record never pushes out an error")
        #expect(await spool.statistics().evicted == 2)
        await spool.close()
    }

    @Test(
        """
        when full, the sender holding the most bytes of the lowest class loses its oldest records first: a noisy uid \
        cannot evict a quiet one
        """,
        arguments: SpoolKind.allCases)
    func fairEviction(_ kind: SpoolKind) async throws {
        /// A record of `recordSize`, its text three characters.
        func from(_ uid: UInt32, _ priority: PriorityClass, _ text: String) -> SpoolEntry {
            SpoolEntry(priority: priority, line: entry(priority, text, padding: 97).line, sender: uid)
        }
        func numbered(_ prefix: String, _ number: Int) -> String { prefix + (number < 10 ? "0\(number)" : "\(number)") }
        let spool = try await kind.make(maximumBytes: 10 * recordSize)
        // The quiet user's two records first, then the noisy one's flood, one commit at a time.
        _ = try await spool.append([from(1000, .info, "q01"), from(1000, .info, "q02")])
        for index in 1...8 { _ = try await spool.append([from(2000, .info, numbered("n", index))]) }
        // Full: each newcomer, noisy or quiet, evicts the noisy user's oldest.
        for index in 9...20 { _ = try await spool.append([from(2000, .info, numbered("n", index))]) }
        let quietNewcomer = try await spool.append([from(1000, .info, "q03")])
        #expect(quietNewcomer == AppendReceipt(accepted: 1, evicted: 1))
        let kept = messages(try await claimBatch(spool, .info))
        #expect(kept.filter { $0.hasPrefix("q") } == ["q01", "q02", "q03"], "\(kept)")
        #expect(
            kept.filter { $0.hasPrefix("n") } == (14...20).map { numbered("n", $0) }, "the noisy user's newest stay")
        #expect(await spool.statistics().evicted == 13)
        await spool.close()

        // The noisy user's flood in one commit: its own newest are refused, and the quiet user's records stay.
        let oneCommit = try await kind.make(maximumBytes: 10 * recordSize)
        _ = try await oneCommit.append([from(1000, .info, "q01"), from(1000, .info, "q02")])
        let flood = try await oneCommit.append((1...20).map { from(2000, .info, numbered("n", $0)) })
        #expect(flood == AppendReceipt(accepted: 8, refused: 12, refusal: .full(budget: 10 * recordSize)))
        let survivors = messages(try await claimBatch(oneCommit, .info))
        #expect(survivors == ["q01", "q02"] + (1...8).map { numbered("n", $0) }, "\(survivors)")
        await oneCommit.close()

        // The lowest class still goes first: the quiet user's debug record before the noisy one's info records.
        let classes = try await kind.make(maximumBytes: 3 * recordSize)
        _ = try await classes.append([from(1000, .debug, "qd1"), from(2000, .info, "n01"), from(2000, .info, "n02")])
        _ = try await classes.append([from(2000, .info, "n03")])
        #expect(try await classes.claim(.debug, limits: limits) == .empty)
        #expect(messages(try await claimBatch(classes, .info)) == ["n01", "n02", "n03"])
        await classes.close()
    }

    @Test("one commit of several senders' records keeps each sender's order and makes a chunk per sender")
    func chunksBySender() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let spool = try await SpoolKind.sqlite.make(path: path)
        let interleaved = (0..<6).map {
            SpoolEntry(priority: .info, line: Array("r\($0)".utf8), sender: UInt32(1000 + $0 % 2))
        }
        _ = try await spool.append(interleaved)
        let claimed = messages(try await claimBatch(spool, .info))
        #expect(claimed.filter { ["r0", "r2", "r4"].contains($0) } == ["r0", "r2", "r4"])
        #expect(claimed.filter { ["r1", "r3", "r5"].contains($0) } == ["r1", "r3", "r5"])
        await spool.close()
        let senders = try await DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: "SELECT sender, count FROM chunk ORDER BY first_sequence").map {
                "\($0[0] as Int64? ?? -1):\($0[1] as Int)"
            }
        }
        #expect(senders == ["1000:3", "1001:3"])
    }

    @Test("a stored line's sender is its top-level uid, never a field's")
    func senderOfLine() {
        let record = LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: 0), priority: .info, severity: .informational, host: "h",
            source: .socket, message: #""uid":0"#, peer: PeerCredentials(pid: 1, uid: 1234, gid: 1, comm: "c"),
            fields: ["uid": "0"])
        #expect(SpoolEntry.sender(ofLine: record.ndjsonLine) == 1234)
        var anonymous = record
        anonymous.peer = nil
        #expect(SpoolEntry.sender(ofLine: anonymous.ndjsonLine) == nil, "a message or a field that says uid is not one")
    }

    @Test(
        """
        dead letters count against the budget, hold at most a quarter of it (the oldest give way), and no record \
        evicts them; purge frees them
        """,
        arguments: SpoolKind.allCases)
    func deadLettersInBudget(_ kind: SpoolKind) async throws {
        let spool = try await kind.make(maximumBytes: 8 * recordSize)
        _ = try await spool.append((1...3).map { entry(.debug, "x\($0)", padding: 98) })
        for _ in 0..<3 {
            try await spool.settle(
                try await claimBatch(spool, .debug, maxRecords: 1),
                .deadLetter(DeliveryFailure(status: 400, reason: "bad")))
        }
        var statistics = await spool.statistics()
        #expect(statistics.deadLetters == 2 && statistics.evicted == 1, "a quarter of 8 records holds 2 dead letters")
        #expect(statistics.bytes == 2 * recordSize && statistics.deadLetterBytes == 2 * recordSize)
        #expect(
            try await spool.deadLetters(limit: 10).map { $0.line.trimmingCharacters(in: .whitespaces) } == ["x2", "x3"])

        // Six records fill the budget beside them; the next evicts a record, never a dead letter.
        _ = try await spool.append((1...6).map { entry(.debug, "d\($0)", padding: 98) })
        #expect(try await spool.append([entry(.info, "i1", padding: 98)]) == AppendReceipt(accepted: 1, evicted: 1))
        statistics = await spool.statistics()
        #expect(statistics.deadLetters == 2 && statistics.bytes == 8 * recordSize)
        #expect(messages(try await claimBatch(spool, .debug)) == (2...6).map { "d\($0)" })

        #expect(try await spool.purgeDeadLetters(.all) == 2)
        #expect(await spool.statistics().bytes == 6 * recordSize, "purge gives their room back")
        await spool.close()
    }

    @Test("eviction deletes nothing when the newcomer would still not fit", arguments: SpoolKind.allCases)
    func evictionForNothing(_ kind: SpoolKind) async throws {
        let spool = try await kind.make(maximumBytes: 4 * recordSize)
        _ = try await spool.append([
            entry(.debug, "d1", padding: 98), entry(.crash, "c1", padding: 98), entry(.crash, "c2", padding: 98),
            entry(.crash, "c3", padding: 98),
        ])
        // Twice a record's size: evicting the one debug record would not make room for it.
        let crash = try await spool.append([entry(.crash, "c4", padding: 98 + recordSize)])
        #expect(crash == AppendReceipt(refused: 1, refusal: .full(budget: 4 * recordSize)))
        let error = try await spool.append([entry(.error, "e1", padding: 98 + recordSize)])
        #expect(error == AppendReceipt(refused: 1, refusal: .full(budget: 4 * recordSize)), "refused, not stored to go")
        #expect(messages(try await claimBatch(spool, .debug)) == ["d1"], "the debug record was kept")
        let statistics = await spool.statistics()
        #expect(statistics.evicted == 0 && statistics.refused == 2)
        await spool.close()
    }

    @Test("a crash record that finds only crash records is refused, loudly", arguments: SpoolKind.allCases)
    func crashRefused(_ kind: SpoolKind) async throws {
        let spool = try await kind.make(maximumBytes: 2 * recordSize)
        _ = try await spool.append([entry(.crash, "c1", padding: 98), entry(.crash, "c2", padding: 98)])
        let receipt = try await spool.append([entry(.crash, "c3", padding: 98)])
        #expect(receipt == AppendReceipt(refused: 1, refusal: .fullOfCrashRecords(budget: 2 * recordSize)))
        #expect(await spool.statistics().refused == 1)
        #expect(messages(try await claimBatch(spool, .crash)) == ["c1", "c2"])
        await spool.close()
    }

    @Test(
        "dead letters keep the reason, and requeue puts records back at their old place", arguments: SpoolKind.allCases)
    func deadLetters(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append((1...3).map { entry(.info, "i\($0)") })
        let batch = try await claimBatch(spool, .info, maxRecords: 2)
        let (good, bad) = batch.halves()
        try await spool.acknowledge(good)
        try await spool.settle(bad, .deadLetter(DeliveryFailure(status: 400, reason: "HTTP 400: bad field")))
        let letters = try await spool.deadLetters(limit: 10)
        #expect(letters.count == 1)
        #expect(
            letters.first?.line == "i2" && letters.first?.status == 400
                && letters.first?.reason == "HTTP 400: bad field")
        #expect(letters.first?.priority == "info")
        #expect(await spool.statistics().deadLetters == 1)

        // An id that names none refuses the whole request, in the write itself: the real one stays a dead letter.
        await #expect(throws: UnknownDeadLetters(ids: [999_999])) {
            try await spool.requeueDeadLetters(.ids([letters[0].id, 999_999]))
        }
        #expect(try await spool.deadLetters(limit: 10).map(\.id) == [letters[0].id])
        #expect(try await spool.requeueDeadLetters(.ids([letters[0].id])) == 1)
        #expect(messages(try await claimBatch(spool, .info)) == ["i2", "i3"])
        #expect(try await spool.deadLetters(limit: 10).isEmpty)
        await spool.close()
    }

    @Test("purge deletes dead letters, by id or all", arguments: SpoolKind.allCases)
    func purge(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append((1...3).map { entry(.debug, "d\($0)") })
        let batch = try await claimBatch(spool, .debug)
        try await spool.settle(batch, .deadLetter(DeliveryFailure(status: 422, reason: "no")))
        let ids = try await spool.deadLetters(limit: 10).map(\.id)
        await #expect(throws: UnknownDeadLetters(ids: [-1, 999_999])) {
            try await spool.purgeDeadLetters(.ids([-1, ids[0], 999_999]))
        }
        #expect(try await spool.deadLetters(limit: 10).count == 3, "nothing purged")
        #expect(try await spool.purgeDeadLetters(.ids([ids[0]])) == 1)
        #expect(try await spool.purgeDeadLetters(.all) == 2)
        #expect(await spool.statistics().deadLetters == 0)
        await spool.close()
    }

    @Test(
        "each commit is announced with its classes once committed, until the spool closes",
        arguments: SpoolKind.allCases)
    func availability(_ kind: SpoolKind) async throws {
        let spool = try await kind.make()
        _ = try await spool.append([entry(.debug, "before anyone listens")])
        let heard = Mutex<[Set<PriorityClass>]>([])
        spool.availability.subscribe { news in
            if case .recordsAvailable(let classes) = news { heard.withLock { $0.append(classes) } }
        }
        _ = try await spool.append([entry(.warning, "w"), entry(.crash, "c")])
        #expect(heard.withLock { $0 } == [[.warning, .crash]], "announced by the time append returns")
        try await spool.enqueue([entry(.info, "i")])
        try await eventually { heard.withLock { $0.count } == 2 }
        #expect(heard.withLock { $0.last } == [.info])
        await spool.close()
        _ = try? await spool.append([entry(.error, "after closing")])
        #expect(heard.withLock { $0.count } == 2, "closing the spool ends the announcements")
    }

    @Test(
        """
        records from a socket that find no room wait for it instead of being dropped; a waited append is refused, told \
        why
        """,
        arguments: SpoolKind.allCases)
    func noRoomWaits(_ kind: SpoolKind) async throws {
        let spool = try await kind.make(maximumBytes: 4 * recordSize, minimumFreeDisk: 0)
        _ = try await spool.append((1...4).map { entry(.error, "e\($0)", padding: 98) })
        // An info record may not evict an error record.
        let told = try await spool.append([entry(.info, "i0", padding: 98)])
        #expect(told.accepted == 0 && told.refused == 1, "\(told)")
        #expect(await spool.statistics().pending[.info] == 0)

        let enqueued = Task { try await spool.enqueue((1...3).map { entry(.info, "i\($0)", padding: 98) }) }
        let errors = try await claimBatch(spool, .error)
        try await spool.acknowledge(errors)
        try await eventually(within: .seconds(30)) { await spool.statistics().pending[.info] == 3 }
        try await enqueued.value
        #expect(messages(try await claimBatch(spool, .info)) == ["i1", "i2", "i3"])
        await spool.close()
    }

    @Test(
        """
        a socket's records waiting for room are let go once the senders stop; what never found room is counted refused \
        by the close
        """,
        arguments: SpoolKind.allCases)
    func stopHoldingSenders(_ kind: SpoolKind) async throws {
        let spool = try await kind.make(maximumBytes: 4 * recordSize, minimumFreeDisk: 0)
        _ = try await spool.append((1...4).map { entry(.error, "e\($0)", padding: 98) })
        let first = Task { try await spool.enqueue([entry(.info, "i1", padding: 98)]) }
        try await eventually { await spool.statistics().waitingForRoom == 1 }
        let second = Task { try await spool.enqueue([entry(.info, "i2", padding: 98)]) }
        try await eventually { await spool.statistics().waitingForRoom == 2 }
        spool.stopHoldingSenders()
        try await first.value
        try await second.value
        await spool.close()
        let statistics = await spool.statistics()
        #expect(statistics.refused == 2 && statistics.pending[.info] == 0, "\(statistics)")
    }
}

@Suite("SQLite spool")
struct SQLiteSpoolTests {
    @Test("records, retry times and dead letters survive a restart; claims do not")
    func restart() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let first = try await SQLiteSpool.open(
            path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        _ = try await first.append([entry(.crash, "c1"), entry(.info, "i1"), entry(.info, "i2"), entry(.debug, "d1")])
        _ = try await claimBatch(first, .info)  // claimed, never settled: as if killed mid-request
        let debug = try await claimBatch(first, .debug)
        try await first.settle(debug, .deadLetter(DeliveryFailure(status: 400, reason: "bad")))
        await first.close()

        let second = try await SQLiteSpool.open(
            path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        #expect(await second.pendingClasses() == [.crash, .info])
        let statistics = await second.statistics()
        #expect(statistics.pending[.info] == 2 && statistics.claimed == 0 && statistics.deadLetters == 1)
        #expect(statistics.bytes == 4 * (2 + SpoolEntry.overhead), "three records and the dead letter")
        #expect(messages(try await claimBatch(second, .info)) == ["i1", "i2"], "the claim was gone at start")
        await second.close()
    }

    @Test("a second process cannot open a spool in use")
    func exclusive() async throws {
        let path = "\(try TemporaryDirectory.make())/spool.db"
        let first = try await SQLiteSpool.open(
            path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        await #expect(throws: SpoolError.inUse(path)) {
            _ = try await SQLiteSpool.open(path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        }
        await first.close()
        let reopened = try await SQLiteSpool.open(
            path: path, maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        await reopened.close()
    }

    @Test("many concurrent appends all commit, in group commits")
    func groupCommit() async throws {
        let spool = try await SpoolKind.sqlite.make()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<20 {
                group.addTask {
                    for index in 0..<50 {
                        let receipt = try await spool.append([entry(.info, "w\(writer)-\(index)")])
                        #expect(receipt.accepted == 1)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await spool.statistics().pending[.info] == 1000)
        await spool.close()
    }

    @Test("""
        appends are synced to the disk when they commit: the writer runs with synchronous FULL, also after a settling \
        write
        """)
    func syncedCommits() async throws {
        let store = try await SQLiteSpool.open(
            path: "\(try TemporaryDirectory.make())/spool.db", maximumBytes: 1 << 30, minimumFreeDiskBytes: 0,
            logger: .test)
        // SQLite's levels: 1 NORMAL (a WAL commit reaches the page cache only), 2 FULL (the WAL is synced).
        let writerLevel = {
            try await store.database.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") }
        }
        #expect(try await writerLevel() == 2)
        try await store.settlingWrite { _ in }
        #expect(try await writerLevel() == 2, "a settling write commits with NORMAL and goes back to FULL")
        await store.close()
    }

    @Test("a new spool file gets 32 KiB pages; a spool made with 4 KiB pages keeps them and its records")
    func pageSize() async throws {
        let directory = try TemporaryDirectory.make()
        let fresh = try await SQLiteSpool.open(
            path: "\(directory)/new.db", maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        #expect(fresh.pageSize == 32 << 10)
        await fresh.close()

        // An older spool: the default 4 KiB pages, records in it.
        let older = "\(directory)/old.db"
        let queue = try DatabaseQueue(path: older)
        try await queue.write { try $0.execute(sql: "CREATE TABLE t (x); DROP TABLE t") }
        try queue.close()
        let spool = try await SpoolKind.sqlite.make(path: older)
        _ = try await spool.append([entry(.info, "kept")])
        await spool.close()
        let reopened = try await SQLiteSpool.open(
            path: older, maximumBytes: 1 << 30, minimumFreeDiskBytes: 0, logger: .test)
        #expect(reopened.pageSize == 4096)
        #expect(await reopened.statistics().pending[.info] == 1)
        await reopened.close()
    }

    @Test("a blob bound without a copy is stored whole, an empty one as an empty blob, and the statement runs on after")
    func borrowedBlob() async throws {
        let queue = try DatabaseQueue(path: "\(try TemporaryDirectory.make())/blobs.db")
        let stored: [(Int64, Data?)] = try await queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, tag TEXT, b BLOB)")
            let insert = try db.makeStatement(sql: "INSERT INTO t (id, b, tag) VALUES (?, ?, ?)")
            try insert.execute(
                [1, nil, "large"], blob: Array((0..<300_000).map { UInt8(truncatingIfNeeded: $0) }), at: 2)
            try insert.execute([2, nil, "empty"], blob: [], at: 2)
            // GRDB's own binding still works on the same statement.
            try insert.execute(arguments: [3, Data([7, 8]), "plain"])
            return try Row.fetchAll(db, sql: "SELECT id, b FROM t ORDER BY id").map { ($0[0], $0[1]) }
        }
        #expect(stored.map(\.0) == [1, 2, 3])
        #expect(stored[0].1 == Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0) }))
        #expect(stored[1].1 == Data(), "an empty blob, not NULL")
        #expect(stored[2].1 == Data([7, 8]))
    }

    @Test("a filling disk evicts lower classes like a full budget; crash records that find no room are refused",
          .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func diskFull() async throws {
        let mountPoint = try await mountTmpfs(size: "4m")
        defer { _ = umount2(mountPoint, Int32(MNT_DETACH)) }

        let spool = try await SpoolKind.sqlite.make(path: "\(mountPoint)/spool.db", minimumFreeDisk: 512 << 10)
        // Random bytes (never a newline, which ends a stored line): compressed chunks take about as much disk.
        func entry(_ priority: PriorityClass, _ text: String) -> SpoolEntry {
            var noise = [UInt8](repeating: 0, count: 2000)
            noise.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
            for index in noise.indices where noise[index] == UInt8(ascii: "\n") { noise[index] = 0 }
            return SpoolEntry(priority: priority, line: Array(text.utf8) + noise)
        }
        // Far more debug records than fit on the disk: the oldest make room for the newest.
        var evicted = 0
        for index in 0..<3000 {
            evicted += try await spool.append([entry(.debug, "d\(index)")]).evicted
        }
        #expect(evicted > 1000)
        #expect(try await spool.append([entry(.crash, "c0")]).accepted == 1)

        // Only crash records left to give way: a crash record that finds no room is refused, not stored.
        var refused = 0
        for index in 1..<3000 where refused == 0 {
            refused += try await spool.append([entry(.crash, "c\(index)")]).refused
        }
        #expect(refused == 1)
        #expect(await spool.statistics().refused == 1)
        #expect(try await claimBatch(spool, .crash, maxRecords: 1).records.count == 1, "the spool still works")
        await spool.close()
    }

    @Test("a spool on a filesystem smaller than spool.min_free_disk keeps records within what the filesystem has",
          .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func filesystemSmallerThanMargin() async throws {
        let mountPoint = try await mountTmpfs(size: "8m")
        defer { _ = umount2(mountPoint, Int32(MNT_DETACH)) }
        let spool = try await SpoolKind.sqlite.make(path: "\(mountPoint)/spool.db", minimumFreeDisk: 64 << 20)
        var accepted = 0
        for index in 0..<100 {
            accepted += try await spool.append(
                [entry(index % 2 == 0 ? .info : .error, "r\(index)", padding: 98)]).accepted
        }
        #expect(accepted == 100)
        #expect(await spool.statistics().pendingTotal == 100)
        #expect(try await spool.append([entry(.crash, "c", padding: 98)]).accepted == 1)
        await spool.close()
    }

    @Test("on a disk filled to the last block, crash records evict info records and are stored",
          .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func fullDiskTakesCrashRecords() async throws {
        let mountPoint = try await mountTmpfs(size: "8m")
        defer { _ = umount2(mountPoint, Int32(MNT_DETACH)) }
        let spool = try await SpoolKind.sqlite.make(path: "\(mountPoint)/spool.db", minimumFreeDisk: 0)
        // Info records until the disk holds no more of them: the spool evicts or the disk refuses.
        for index in 0..<10_000 {
            guard let receipt = try? await spool.append([Self.incompressible(.info, "i\(index)")]), receipt.evicted == 0
            else { break }
        }
        #expect(await spool.statistics().pending[.info] ?? 0 > 100)
        try Self.fillDisk(mountPoint)

        var refusals: [String] = []
        for index in 0..<60 {
            do {
                let receipt = try await spool.append([Self.incompressible(.crash, "c\(index)")])
                if receipt.accepted != 1 { refusals.append("\(receipt)") }
            } catch {
                refusals.append("\(error)")
            }
        }
        #expect(refusals.isEmpty, "\(refusals.count) refused: \(refusals.first ?? "")")
        #expect(try await claimBatch(spool, .crash).records.count == 60 - refusals.count)
        await spool.close()
    }

    @Test(
        """
        through a disk that fills, a socket's records are each stored once: pending and evicted add up to what was \
        handed over
        """,
        .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func fillingDiskStoresOnce() async throws {
        let mountPoint = try await mountTmpfs(size: "8m")
        defer { _ = umount2(mountPoint, Int32(MNT_DETACH)) }
        let spool = try await SpoolKind.sqlite.make(path: "\(mountPoint)/spool.db", minimumFreeDisk: 0)
        var handed = 0
        for round in 0..<40 {
            let priority: PriorityClass = round < 30 ? .info : .error
            try await spool.enqueue((0..<200).map { Self.incompressible(priority, "r\(round)-\($0)") })
            handed += 200
            let expected = handed
            try await eventually {
                let statistics = await spool.statistics()
                return statistics.pendingTotal + statistics.evicted == expected && statistics.waitingForRoom == 0
            }
            if round == 20 { try Self.fillDisk(mountPoint) }
        }
        #expect(await spool.statistics().evicted > 0)
        await spool.close()
    }

    /// A record of about 2 000 random bytes (never a newline, which ends a stored line): compressed, it takes
    /// about as much disk.
    static func incompressible(_ priority: PriorityClass, _ text: String) -> SpoolEntry {
        var noise = [UInt8](repeating: 0, count: 2000)
        noise.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        for index in noise.indices where noise[index] == UInt8(ascii: "\n") { noise[index] = 0 }
        return SpoolEntry(priority: priority, line: Array(text.utf8) + noise)
    }

    /// Fills the filesystem at `directory` to its last block with a file of its own.
    static func fillDisk(_ directory: String) throws {
        let descriptor = open("\(directory)/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let block = [UInt8](repeating: 0xA5, count: 4096)
        while block.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        var byte: UInt8 = 1
        while write(descriptor, &byte, 1) > 0 {}
        var status = statvfs()
        #expect(statvfs(directory, &status) == 0 && status.f_bavail == 0, "the disk is full")
    }
}
